//! Splitting one CSV record (RFC 4180 quoting, as JMeter and vegeta write
//! it) into fields.

use std::borrow::Cow;

/// The fields of `record`, or `None` when a quoted field is still open at
/// its end (the record continues on the next line).
pub(crate) fn fields(record: &[u8], delimiter: u8) -> Option<Vec<Cow<'_, [u8]>>> {
    let mut out = Vec::with_capacity(16);
    let mut i = 0;
    loop {
        if record.get(i) == Some(&b'"') {
            // Quoted: "" is a quote; the field ends at a lone quote.
            let mut value = Vec::new();
            let mut j = i + 1;
            loop {
                match record.get(j) {
                    None => return None,
                    Some(b'"') if record.get(j + 1) == Some(&b'"') => {
                        value.push(b'"');
                        j += 2;
                    }
                    Some(b'"') => {
                        j += 1;
                        break;
                    }
                    Some(&c) => {
                        value.push(c);
                        j += 1;
                    }
                }
            }
            // Anything between the closing quote and the delimiter is kept
            // as text, as lenient readers do; JMeter never writes it.
            let end = memchr::memchr(delimiter, &record[j..]).map_or(record.len(), |k| j + k);
            value.extend_from_slice(&record[j..end]);
            out.push(Cow::Owned(value));
            if end >= record.len() {
                return Some(out);
            }
            i = end + 1;
        } else {
            let end = memchr::memchr(delimiter, &record[i..]).map_or(record.len(), |k| i + k);
            out.push(Cow::Borrowed(&record[i..end]));
            if end >= record.len() {
                return Some(out);
            }
            i = end + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(r: &[u8]) -> Option<Vec<String>> {
        fields(r, b',').map(|v| {
            v.iter()
                .map(|f| String::from_utf8_lossy(f).into_owned())
                .collect()
        })
    }

    #[test]
    fn quoted_fields_hold_delimiters_quotes_and_newlines() {
        assert_eq!(strs(b"a,b,,c").unwrap(), ["a", "b", "", "c"]);
        assert_eq!(strs(b"a,\"x,\"\"y\"\"\",c").unwrap(), ["a", "x,\"y\"", "c"]);
        assert_eq!(strs(b"\"a\nb\",c").unwrap(), ["a\nb", "c"]);
        assert_eq!(strs(b"a,").unwrap(), ["a", ""]);
        assert!(strs(b"a,\"open").is_none());
    }
}
