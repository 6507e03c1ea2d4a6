//! CSV export of a run's series.
//!
//! Long form: one row per point, `series,unit,t_ms,value`; every series
//! keeps its own times. Wide form: one row per distinct time, one column per
//! series (`t_ms,<name>...`), empty where a series has no point at that time.

use crate::model::Series;
use std::collections::BTreeMap;
use std::io::{self, Write};

/// Quotes a CSV field when it holds a separator, quote or newline.
fn field(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\"")).into()
    } else {
        s.into()
    }
}

/// Writes series in long form.
pub fn write_long<W: Write>(out: &mut W, series: &[Series]) -> io::Result<()> {
    writeln!(out, "series,unit,t_ms,value")?;
    for s in series {
        let name = field(&s.name);
        let unit = field(&s.unit);
        for (t, v) in s.t_ms.iter().zip(&s.v) {
            writeln!(out, "{name},{unit},{t},{v}")?;
        }
    }
    Ok(())
}

/// Writes series in wide form (times merged across series).
pub fn write_wide<W: Write>(out: &mut W, series: &[Series]) -> io::Result<()> {
    write!(out, "t_ms")?;
    for s in series {
        write!(out, ",{}", field(&s.name))?;
    }
    writeln!(out)?;
    // Key by microseconds so times equal in the store merge into one row.
    let mut rows: BTreeMap<i64, Vec<Option<f64>>> = BTreeMap::new();
    for (i, s) in series.iter().enumerate() {
        for (t, v) in s.t_ms.iter().zip(&s.v) {
            let key = (t * 1000.0).round() as i64;
            rows.entry(key).or_insert_with(|| vec![None; series.len()])[i] = Some(*v);
        }
    }
    for (t, vals) in rows {
        write!(out, "{}", t as f64 / 1000.0)?;
        for v in vals {
            match v {
                Some(v) => write!(out, ",{v}")?,
                None => write!(out, ",")?,
            }
        }
        writeln!(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(name: &str, t: &[f64], v: &[f64]) -> Series {
        Series {
            name: name.into(),
            unit: "%".into(),
            t_ms: t.to_vec(),
            v: v.to_vec(),
        }
    }

    #[test]
    fn long_and_wide() {
        let series = vec![
            s("a", &[0.0, 1000.0], &[1.0, 2.0]),
            s("b,x", &[1000.0], &[5.5]),
        ];
        let mut long = Vec::new();
        write_long(&mut long, &series).unwrap();
        assert_eq!(
            String::from_utf8(long).unwrap(),
            "series,unit,t_ms,value\na,%,0,1\na,%,1000,2\n\"b,x\",%,1000,5.5\n"
        );
        let mut wide = Vec::new();
        write_wide(&mut wide, &series).unwrap();
        assert_eq!(
            String::from_utf8(wide).unwrap(),
            "t_ms,a,\"b,x\"\n0,1,\n1000,2,5.5\n"
        );
    }
}
