//! gRPC unary calls over HTTP/2: the method path, the length-prefixed
//! message framing (gRPC over HTTP/2, "Length-Prefixed-Message") and the
//! `grpc-status` of an answer. The message itself is sent as given (a
//! protobuf-encoded file): keisoku never needs the schema.

use http::HeaderMap;

/// Checks a gRPC method path, `/package.Service/Method`: two non-empty
/// parts, no query, no spaces.
pub fn check_method(path: &str) -> Result<(), String> {
    let bad = |why: &str| {
        Err(format!(
            "bad gRPC method {path:?}: {why} (use /package.Service/Method)"
        ))
    };
    let Some(rest) = path.strip_prefix('/') else {
        return bad("it must start with '/'");
    };
    let Some((service, method)) = rest.split_once('/') else {
        return bad("no '/' between the service and the method");
    };
    let ok = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    };
    if !ok(service) || !ok(method) {
        return bad("the service and the method are names (letters, digits, '.', '_', '-')");
    }
    Ok(())
}

/// One uncompressed length-prefixed message: a zero flag byte, the length
/// as a big-endian u32, the message.
pub fn frame(message: &[u8]) -> Result<Vec<u8>, String> {
    let len = u32::try_from(message.len())
        .map_err(|_| format!("a gRPC message of {} bytes is over 4 GiB", message.len()))?;
    let mut out = Vec::with_capacity(5 + message.len());
    out.push(0);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(message);
    Ok(out)
}

/// The `grpc-status` in trailers (or in the headers of a trailers-only
/// answer): `None` when absent, an error when it is not a number.
pub fn status(headers: &HeaderMap) -> Option<Result<u32, String>> {
    let v = headers.get("grpc-status")?;
    let text = String::from_utf8_lossy(v.as_bytes());
    Some(
        text.trim()
            .parse::<u32>()
            .map_err(|_| format!("grpc-status {text:?} is not a number")),
    )
}

/// The canonical name of a status code (for messages; the JSON counts by
/// number).
pub fn code_name(code: u32) -> &'static str {
    match code {
        0 => "OK",
        1 => "CANCELLED",
        2 => "UNKNOWN",
        3 => "INVALID_ARGUMENT",
        4 => "DEADLINE_EXCEEDED",
        5 => "NOT_FOUND",
        6 => "ALREADY_EXISTS",
        7 => "PERMISSION_DENIED",
        8 => "RESOURCE_EXHAUSTED",
        9 => "FAILED_PRECONDITION",
        10 => "ABORTED",
        11 => "OUT_OF_RANGE",
        12 => "UNIMPLEMENTED",
        13 => "INTERNAL",
        14 => "UNAVAILABLE",
        15 => "DATA_LOSS",
        16 => "UNAUTHENTICATED",
        _ => "non-standard",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_paths() {
        assert!(check_method("/helloworld.Greeter/SayHello").is_ok());
        assert!(check_method("/a/b").is_ok());
        for bad in [
            "", "/", "a/b", "/a", "/a/", "//b", "/a/b?x=1", "/a b/c", "/a/b/c",
        ] {
            assert!(check_method(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn frames_are_length_prefixed() {
        assert_eq!(frame(b"").unwrap(), vec![0, 0, 0, 0, 0]);
        assert_eq!(
            frame(b"\x0a\x03abc").unwrap(),
            vec![0, 0, 0, 0, 5, 0x0a, 3, b'a', b'b', b'c']
        );
        let big = vec![7u8; 70_000];
        let f = frame(&big).unwrap();
        assert_eq!(&f[..5], &[0, 0, 1, 0x11, 0x70]);
        assert_eq!(f.len(), 70_005);
    }

    #[test]
    fn statuses() {
        let mut h = HeaderMap::new();
        assert!(status(&h).is_none());
        h.insert("grpc-status", "0".parse().unwrap());
        assert_eq!(status(&h), Some(Ok(0)));
        h.insert("grpc-status", "14".parse().unwrap());
        assert_eq!(status(&h), Some(Ok(14)));
        h.insert("grpc-status", "x".parse().unwrap());
        assert!(status(&h).unwrap().is_err());
        assert_eq!(code_name(5), "NOT_FOUND");
    }
}
