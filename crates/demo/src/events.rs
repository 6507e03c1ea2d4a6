//! Bid events for the external logger: posted synchronously in the request
//! path (the ISUCON8 case in the field notes' §4), or queued and posted in
//! batches by a background thread (its fix).

use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::http::Client;
use crate::stats::Counters;
use crate::DemoError;

/// Events per batch post.
const BATCH: usize = 256;
/// The longest an event waits in the queue before its batch is posted.
const LINGER: Duration = Duration::from_millis(50);

pub(crate) enum EventSink {
    Sync {
        client: Client,
        counters: Arc<Counters>,
    },
    Queued {
        tx: Mutex<Option<SyncSender<String>>>,
        thread: Mutex<Option<JoinHandle<()>>>,
        counters: Arc<Counters>,
    },
}

impl EventSink {
    pub(crate) fn new(
        client: Client,
        synchronous: bool,
        counters: Arc<Counters>,
    ) -> Result<EventSink, DemoError> {
        if synchronous {
            return Ok(EventSink::Sync { client, counters });
        }
        let (tx, rx) = sync_channel::<String>(16 * 1024);
        let c = counters.clone();
        let thread = std::thread::Builder::new()
            .name("demo-event-batcher".into())
            .spawn(move || batcher(client, rx, c))
            .map_err(|e| DemoError::Thread(e.to_string()))?;
        Ok(EventSink::Queued {
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            counters,
        })
    }

    /// Hands one JSON event to the logger.
    pub(crate) fn send(&self, event: String) -> Result<(), DemoError> {
        match self {
            EventSink::Sync { client, counters } => {
                Counters::bump(&counters.external_events);
                let started = Instant::now();
                let result = client.call(
                    "POST",
                    "/events",
                    event.as_bytes(),
                    &counters.external_connects,
                );
                Counters::add(
                    &counters.external_wait_ns,
                    started.elapsed().as_nanos() as u64,
                );
                Counters::bump(&counters.external_posts);
                match result {
                    Ok((200, _)) => Ok(()),
                    Ok((status, _)) => Err(DemoError::Upstream(format!(
                        "external logger answered {status}"
                    ))),
                    Err(e) => Err(e),
                }
            }
            EventSink::Queued { tx, counters, .. } => {
                Counters::bump(&counters.external_events);
                let tx = tx.lock().ok().and_then(|g| g.clone());
                match tx.map(|tx| tx.try_send(event)) {
                    Some(Ok(())) => {}
                    // A full queue means the logger is down or far behind; the
                    // bid must not wait for it, so the event is counted and dropped.
                    Some(Err(TrySendError::Full(_)))
                    | Some(Err(TrySendError::Disconnected(_)))
                    | None => Counters::bump(&counters.external_dropped),
                }
                Ok(())
            }
        }
    }

    pub(crate) fn close(&self) {
        if let EventSink::Queued { tx, thread, .. } = self {
            if let Ok(mut tx) = tx.lock() {
                tx.take();
            }
            if let Some(t) = thread.lock().ok().and_then(|mut t| t.take()) {
                let _ = t.join();
            }
        }
    }
}

fn batcher(client: Client, rx: Receiver<String>, counters: Arc<Counters>) {
    let mut batch: Vec<String> = Vec::with_capacity(BATCH);
    let mut open = true;
    while open {
        match rx.recv_timeout(LINGER) {
            Ok(ev) => {
                batch.push(ev);
                let deadline = Instant::now() + LINGER;
                while batch.len() < BATCH {
                    let left = deadline.saturating_duration_since(Instant::now());
                    match rx.recv_timeout(left) {
                        Ok(ev) => batch.push(ev),
                        Err(RecvTimeoutError::Timeout) => break,
                        Err(RecvTimeoutError::Disconnected) => {
                            open = false;
                            break;
                        }
                    }
                }
            }
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => open = false,
        }
        if batch.is_empty() {
            continue;
        }
        let mut body = String::with_capacity(batch.iter().map(|e| e.len() + 1).sum::<usize>() + 2);
        body.push('[');
        for (i, ev) in batch.drain(..).enumerate() {
            if i > 0 {
                body.push(',');
            }
            body.push_str(&ev);
        }
        body.push(']');
        Counters::bump(&counters.external_posts);
        // A failed batch is lost, as with any fire-and-forget audit log; the
        // counters still show it was attempted.
        let _ = client.call(
            "POST",
            "/events",
            body.as_bytes(),
            &counters.external_connects,
        );
    }
}
