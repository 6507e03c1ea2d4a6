//! Sizes: `1GiB`, `200MB`, `64K`, `1.5G` or a plain number of bytes.

/// Bytes from `1GiB`, `200MB`, `64K`, `1.5G` or a plain number, read as GNU
/// tools read them: K, KiB = 1024; KB = 1000 (and so on for M, G, T).
/// `None` when it is not a size.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().ok().filter(|n: &f64| n.is_finite())?;
    let unit = unit.trim();
    let (letter, rest) = match unit.chars().next() {
        Some(c) => (Some(c.to_ascii_uppercase()), &unit[c.len_utf8()..]),
        None => (None, ""),
    };
    let power = match letter {
        None => 0,
        Some('B') if rest.is_empty() => 0,
        Some('K') => 1,
        Some('M') => 2,
        Some('G') => 3,
        Some('T') => 4,
        _ => return None,
    };
    let base: f64 = match (power, rest) {
        (0, _) => 1.0,
        (_, "B" | "b") => 1000.0,
        (_, "" | "i" | "iB" | "ib") => 1024.0,
        _ => return None,
    };
    let v = n * base.powi(power);
    (v < 1.8e19).then_some(v as u64)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_read_as_gnu_tools_read_them() {
        assert_eq!(parse_size("0"), Some(0));
        assert_eq!(parse_size("1234"), Some(1234));
        assert_eq!(parse_size("10B"), Some(10));
        assert_eq!(parse_size("64K"), Some(65_536));
        assert_eq!(parse_size("64k"), Some(65_536));
        assert_eq!(parse_size("64KB"), Some(64_000));
        assert_eq!(parse_size("1GiB"), Some(1 << 30));
        assert_eq!(parse_size("1.5G"), Some(3 << 29));
        assert_eq!(parse_size("200MB"), Some(200_000_000));
        assert_eq!(parse_size(" 2 TiB "), Some(2 << 40));
        for bad in ["", "G", "1X", "1GiBs", "-1", "1e3", "99999999999T"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }
}
