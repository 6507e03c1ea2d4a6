//! FlameScope-style subsecond heat map: one column per second, `rows`
//! cells per second, each cell the sample count (weight) in its slice.

use crate::model::Profile;

/// Frame names that mark a CPU as idle: keisoku's one list.
pub use keisoku_common::IDLE_FRAMES;

/// A heat map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeatMap {
    /// Cells per second.
    pub rows: u32,
    /// Seconds covered.
    pub columns: u32,
    /// Weight per cell, column-major: `cells[col * rows + row]`.
    pub cells: Vec<u64>,
    /// Largest cell.
    pub max: u64,
    /// Samples left out as idle.
    pub idle_samples: u64,
}

/// Whether the stack ending at `node` is idle (any frame in [`IDLE_FRAMES`]).
pub fn idle_nodes(p: &Profile) -> Vec<bool> {
    let idle_frame: Vec<bool> = p
        .frames
        .iter()
        .map(|f| IDLE_FRAMES.contains(&f.name.as_str()))
        .collect();
    let mut idle = vec![false; p.node_count()];
    // Parents have smaller ids than children, so one pass in id order works.
    for n in 0..p.node_count() {
        let parent = p.parent[n];
        let from_parent = parent != crate::model::NO_PARENT && idle[parent as usize];
        idle[n] = from_parent || idle_frame[p.node_frame[n] as usize];
    }
    idle
}

/// Longest span a heat map covers: a day of one-second columns (tens of
/// MB at most), so a stray timestamp cannot ask for terabytes.
pub const MAX_COLUMNS: u64 = 86_400;

/// Buckets the samples of `p`; `None` when it has no sample times or they
/// span more than [`MAX_COLUMNS`] seconds.
pub fn heat_map(p: &Profile, rows: u32, include_idle: bool) -> Option<HeatMap> {
    let times = p.samples.time_ns.as_ref()?;
    if p.counts.is_some() {
        return None;
    }
    let rows = rows.clamp(1, 1000);
    let last = times.iter().copied().max().unwrap_or(0);
    let columns = last / 1_000_000_000 + 1;
    if columns > MAX_COLUMNS {
        return None;
    }
    let columns = columns as u32;
    let mut cells = vec![0u64; columns as usize * rows as usize];
    let idle = idle_nodes(p);
    let mut idle_samples = 0;
    let slice = 1_000_000_000 / u64::from(rows);
    for (i, &t) in times.iter().enumerate() {
        if !include_idle && idle[p.samples.node[i] as usize] {
            idle_samples += 1;
            continue;
        }
        let col = t / 1_000_000_000;
        let row = ((t % 1_000_000_000) / slice).min(u64::from(rows) - 1);
        let cell = &mut cells[(col * u64::from(rows) + row) as usize];
        *cell = cell.saturating_add(p.samples.weight_of(i));
    }
    let max = cells.iter().copied().max().unwrap_or(0);
    Some(HeatMap {
        rows,
        columns,
        cells,
        max,
        idle_samples,
    })
}

impl HeatMap {
    /// The heat map as terminal text: a header line, then one line per row
    /// (a fraction of a second, top = start of the second) with one shaded
    /// character per column (a second), darker for more samples.
    pub fn render_text(&self) -> String {
        const SHADES: [char; 5] = [' ', '░', '▒', '▓', '█'];
        let h = self;
        let mut o = format!(
            "{} s x {} rows/s, busiest cell {} samples{}\n",
            h.columns,
            h.rows,
            h.max,
            if h.idle_samples > 0 {
                format!(", {} idle samples left out (--idle)", h.idle_samples)
            } else {
                String::new()
            }
        );
        for row in 0..h.rows {
            let mut line = String::with_capacity(h.columns as usize + 8);
            line.push_str(&format!(
                "{:>5.0}ms ",
                f64::from(row) * 1000.0 / f64::from(h.rows)
            ));
            for col in 0..h.columns {
                let v = h
                    .cells
                    .get((col * h.rows + row) as usize)
                    .copied()
                    .unwrap_or(0);
                // Four shades above empty, the busiest cell darkest.
                let shade = if v == 0 || h.max == 0 {
                    0
                } else {
                    1 + ((v * 4 - 1) / h.max) as usize
                };
                line.push(SHADES[shade.min(4)]);
            }
            o.push_str(line.trim_end());
            o.push('\n');
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn perf_at(secs: &[&str]) -> Profile {
        let text: String = secs
            .iter()
            .map(|s| format!("java 100/101 [000] {s}: 1 cpu-clock: \n\t 1 f (/b)\n\n"))
            .collect();
        crate::perf::parse(&mut text.as_bytes(), "t", &Default::default())
            .unwrap()
            .0
    }

    #[test]
    fn a_stray_timestamp_does_not_allocate_years_of_columns() {
        // Crash input for the perf_script fuzz target: two samples 300
        // years apart asked for 10^10 columns (and an index past the u32
        // column count).
        assert!(heat_map(&perf_at(&["1.000000", "9999999999.000000"]), 49, true).is_none());
        let h = heat_map(&perf_at(&["1.000000", "100.500000"]), 49, true).unwrap();
        assert_eq!(h.columns, 100);
        assert_eq!(h.cells.iter().sum::<u64>(), 2);
    }

    #[test]
    fn render_text_shades_cells_by_count() {
        let h = HeatMap {
            rows: 2,
            columns: 3,
            cells: vec![4, 0, 1, 2, 0, 0],
            max: 4,
            idle_samples: 7,
        };
        assert_eq!(
            h.render_text(),
            "3 s x 2 rows/s, busiest cell 4 samples, 7 idle samples left out (--idle)\n    \
             0ms █░\n  500ms  ▒\n"
        );
    }
}
