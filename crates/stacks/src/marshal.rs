//! A reader for Python's `marshal` serialisation, the container of cProfile
//! and pstats files (`Profile.dump_stats`, `pstats.Stats.dump_stats`).
//!
//! Only the data types are read (no code objects): None, booleans, ints
//! (`i`, `I` and the 15-bit-digit longs `l`), floats (text `f` and binary
//! `g`), complex numbers, bytes and strings in all their spellings, tuples,
//! lists, dicts, sets and references. Since marshal version 3 an object
//! written more than once is stored once with the `FLAG_REF` bit and later
//! named by a `TYPE_REF` index; containers take their index before their
//! contents, as CPython's reader assigns them. Values share reference
//! targets through `Rc`, so a file that references one large tuple many
//! times costs no more memory than the file itself.

use std::rc::Rc;

/// The bit that asks the reader to remember an object for later references.
const FLAG_REF: u8 = 0x80;
/// Nesting deeper than this is refused, as CPython's own reader does
/// (`MAX_MARSHAL_STACK_DEPTH`), so hostile input cannot exhaust the stack.
pub const MAX_DEPTH: usize = 2000;

/// One unmarshalled value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `None`.
    None,
    /// `True` or `False`.
    Bool(bool),
    /// `StopIteration` or `Ellipsis`, kept by name.
    Singleton(&'static str),
    /// An integer that fits 64 bits.
    Int(i64),
    /// A float.
    Float(f64),
    /// A complex number (real, imaginary).
    Complex(f64, f64),
    /// A `bytes` object.
    Bytes(Rc<[u8]>),
    /// A `str` (unicode, ascii, interned or short: one type here).
    Str(Rc<str>),
    /// A tuple.
    Tuple(Rc<[Value]>),
    /// A list.
    List(Rc<[Value]>),
    /// A dict, in the file's order.
    Dict(Rc<[(Value, Value)]>),
    /// A set or frozenset.
    Set(Rc<[Value]>),
}

impl Value {
    /// The string, when this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, when this is one (booleans are not).
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The number as a float, when this is an int or a float.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// The items, when this is a tuple.
    pub fn as_tuple(&self) -> Option<&[Value]> {
        match self {
            Value::Tuple(t) => Some(t),
            _ => None,
        }
    }

    /// The entries, when this is a dict.
    pub fn as_dict(&self) -> Option<&[(Value, Value)]> {
        match self {
            Value::Dict(d) => Some(d),
            _ => None,
        }
    }

    /// A short name of the value's type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::None => "None",
            Value::Bool(_) => "bool",
            Value::Singleton(s) => s,
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Complex(..) => "complex",
            Value::Bytes(_) => "bytes",
            Value::Str(_) => "str",
            Value::Tuple(_) => "tuple",
            Value::List(_) => "list",
            Value::Dict(_) => "dict",
            Value::Set(_) => "set",
        }
    }
}

/// Why a marshal stream could not be read; `at` is the byte offset of the
/// object or field that failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MarshalError {
    /// The stream ends inside an object.
    #[error("byte {at}: the data ends inside a {what}")]
    Truncated {
        /// Offset of the object.
        at: u64,
        /// What was being read.
        what: &'static str,
    },
    /// A type code this reader does not know, or one that holds no data
    /// (code objects).
    #[error("byte {at}: marshal type {code:?} is not a data type this reader knows")]
    UnknownType {
        /// Offset of the type byte.
        at: u64,
        /// The type byte (without `FLAG_REF`).
        code: char,
    },
    /// A negative length or count.
    #[error("byte {at}: impossible length {len}")]
    BadLength {
        /// Offset of the length.
        at: u64,
        /// The length read.
        len: i64,
    },
    /// A `TYPE_REF` to an index never stored, or to a container still
    /// being read (a cycle, which data values cannot have).
    #[error("byte {at}: reference {index} names no complete object")]
    BadRef {
        /// Offset of the reference.
        at: u64,
        /// The index.
        index: u32,
    },
    /// An integer larger than 64 bits, or a float text that is no number.
    #[error("byte {at}: {why}")]
    BadNumber {
        /// Offset of the number.
        at: u64,
        /// What is wrong.
        why: &'static str,
    },
    /// A string that is not valid UTF-8.
    #[error("byte {at}: a string that is not UTF-8")]
    BadUtf8 {
        /// Offset of the string.
        at: u64,
    },
    /// Nesting deeper than [`MAX_DEPTH`].
    #[error("byte {at}: nested deeper than {MAX_DEPTH} levels")]
    TooDeep {
        /// Offset of the object that went too deep.
        at: u64,
    },
    /// A NULL marker where a value must be (it only ends dicts).
    #[error("byte {at}: a NULL where a value must be")]
    UnexpectedNull {
        /// Offset of the marker.
        at: u64,
    },
    /// Bytes left after the one object the stream holds.
    #[error("byte {at}: {left} bytes left after the object")]
    Trailing {
        /// Offset of the first extra byte.
        at: u64,
        /// How many bytes are left.
        left: u64,
    },
}

impl MarshalError {
    /// The byte offset the error is about.
    pub fn offset(&self) -> u64 {
        match self {
            MarshalError::Truncated { at, .. }
            | MarshalError::UnknownType { at, .. }
            | MarshalError::BadLength { at, .. }
            | MarshalError::BadRef { at, .. }
            | MarshalError::BadNumber { at, .. }
            | MarshalError::BadUtf8 { at }
            | MarshalError::TooDeep { at }
            | MarshalError::UnexpectedNull { at }
            | MarshalError::Trailing { at, .. } => *at,
        }
    }
}

type R<T> = std::result::Result<T, MarshalError>;

/// Reads the one object a marshal stream holds (as `marshal.loads` does,
/// but refusing trailing bytes, which a dump never writes).
pub fn loads(data: &[u8]) -> R<Value> {
    let mut r = Reader {
        data,
        pos: 0,
        refs: Vec::new(),
    };
    let v = r.object(0)?.ok_or(MarshalError::UnexpectedNull { at: 0 })?;
    if r.pos < data.len() {
        return Err(MarshalError::Trailing {
            at: r.pos as u64,
            left: (data.len() - r.pos) as u64,
        });
    }
    Ok(v)
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    /// Objects stored with `FLAG_REF`, by index; `None` while a container
    /// that reserved its slot is still being read.
    refs: Vec<Option<Value>>,
}

impl Reader<'_> {
    fn take(&mut self, n: usize, what: &'static str) -> R<&[u8]> {
        let at = self.pos;
        let end =
            at.checked_add(n)
                .filter(|&e| e <= self.data.len())
                .ok_or(MarshalError::Truncated {
                    at: at as u64,
                    what,
                })?;
        self.pos = end;
        Ok(&self.data[at..end])
    }

    fn byte(&mut self, what: &'static str) -> R<u8> {
        Ok(self.take(1, what)?[0])
    }

    fn i32(&mut self, what: &'static str) -> R<i32> {
        let b = self.take(4, what)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn f64_bin(&mut self) -> R<f64> {
        let b = self.take(8, "binary float")?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(f64::from_le_bytes(a))
    }

    fn f64_text(&mut self) -> R<f64> {
        let at = self.pos as u64;
        let n = self.byte("float")? as usize;
        let t = self.take(n, "float")?;
        let s = std::str::from_utf8(t).map_err(|_| MarshalError::BadUtf8 { at })?;
        // repr() of a float: digits, "inf", "-inf" or "nan", which Rust's
        // parser reads the same way.
        s.parse::<f64>().map_err(|_| MarshalError::BadNumber {
            at,
            why: "a float text that is no number",
        })
    }

    /// A length in elements, each needing at least `min` bytes, so a huge
    /// count in a small file fails before anything is allocated.
    fn count(&mut self, long: bool, min: usize) -> R<usize> {
        let at = self.pos as u64;
        let n = if long {
            i64::from(self.i32("length")?)
        } else {
            i64::from(self.byte("length")?)
        };
        let left = (self.data.len() - self.pos) as i64;
        if n < 0 {
            return Err(MarshalError::BadLength { at, len: n });
        }
        if n.saturating_mul(min as i64) > left {
            return Err(MarshalError::Truncated {
                at,
                what: "string or container",
            });
        }
        Ok(n as usize)
    }

    fn text(&mut self, long: bool) -> R<Value> {
        let at = self.pos as u64;
        let n = self.count(long, 1)?;
        let b = self.take(n, "string")?;
        let s = std::str::from_utf8(b).map_err(|_| MarshalError::BadUtf8 { at })?;
        Ok(Value::Str(Rc::from(s)))
    }

    fn long(&mut self) -> R<i64> {
        let at = self.pos as u64;
        let n = i64::from(self.i32("long")?);
        let digits = n.unsigned_abs() as usize;
        if digits.saturating_mul(2) > self.data.len() - self.pos {
            return Err(MarshalError::Truncated { at, what: "long" });
        }
        let mut v: i128 = 0;
        let mut shift = 0u32;
        for _ in 0..digits {
            let b = self.take(2, "long")?;
            let d = u16::from_le_bytes([b[0], b[1]]);
            if d >= 1 << 15 {
                return Err(MarshalError::BadNumber {
                    at,
                    why: "a long digit over 15 bits",
                });
            }
            if d != 0 {
                if shift >= 64 {
                    return Err(MarshalError::BadNumber {
                        at,
                        why: "an integer larger than 64 bits",
                    });
                }
                v |= i128::from(d) << shift;
            }
            shift += 15;
        }
        let v = if n < 0 { -v } else { v };
        i64::try_from(v).map_err(|_| MarshalError::BadNumber {
            at,
            why: "an integer larger than 64 bits",
        })
    }

    fn items(&mut self, n: usize, depth: usize) -> R<Vec<Value>> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let at = self.pos as u64;
            out.push(
                self.object(depth + 1)?
                    .ok_or(MarshalError::UnexpectedNull { at })?,
            );
        }
        Ok(out)
    }

    /// One object; `None` for the NULL marker that ends a dict.
    fn object(&mut self, depth: usize) -> R<Option<Value>> {
        let at = self.pos as u64;
        if depth > MAX_DEPTH {
            return Err(MarshalError::TooDeep { at });
        }
        let code = self.byte("object")?;
        let flag = code & FLAG_REF != 0;
        let ty = code & !FLAG_REF;
        // Containers take their reference index before their contents.
        let slot = if flag && matches!(ty, b'(' | b')' | b'[' | b'{' | b'<' | b'>') {
            self.refs.push(None);
            Some(self.refs.len() - 1)
        } else {
            None
        };
        let v = match ty {
            b'0' => return Ok(None),
            b'N' => Value::None,
            b'F' => Value::Bool(false),
            b'T' => Value::Bool(true),
            b'S' => Value::Singleton("StopIteration"),
            b'.' => Value::Singleton("Ellipsis"),
            b'i' => Value::Int(i64::from(self.i32("int")?)),
            b'I' => {
                let b = self.take(8, "int64")?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                Value::Int(i64::from_le_bytes(a))
            }
            b'l' => Value::Int(self.long()?),
            b'f' => Value::Float(self.f64_text()?),
            b'g' => Value::Float(self.f64_bin()?),
            b'x' => Value::Complex(self.f64_text()?, self.f64_text()?),
            b'y' => Value::Complex(self.f64_bin()?, self.f64_bin()?),
            b's' => {
                let n = self.count(true, 1)?;
                Value::Bytes(Rc::from(self.take(n, "bytes")?))
            }
            b't' | b'u' | b'a' | b'A' => self.text(true)?,
            b'z' | b'Z' => self.text(false)?,
            b'(' | b'[' | b'<' | b'>' => {
                let n = self.count(true, 1)?;
                let items: Rc<[Value]> = self.items(n, depth)?.into();
                match ty {
                    b'(' => Value::Tuple(items),
                    b'[' => Value::List(items),
                    _ => Value::Set(items),
                }
            }
            b')' => {
                let n = self.count(false, 1)?;
                Value::Tuple(self.items(n, depth)?.into())
            }
            b'{' => {
                let mut entries = Vec::new();
                while let Some(k) = self.object(depth + 1)? {
                    let vat = self.pos as u64;
                    let v = self
                        .object(depth + 1)?
                        .ok_or(MarshalError::UnexpectedNull { at: vat })?;
                    entries.push((k, v));
                }
                Value::Dict(entries.into())
            }
            b'r' => {
                let index = self.i32("reference")? as u32;
                let v = self
                    .refs
                    .get(index as usize)
                    .and_then(Option::as_ref)
                    .ok_or(MarshalError::BadRef { at, index })?;
                return Ok(Some(v.clone()));
            }
            other => {
                return Err(MarshalError::UnknownType {
                    at,
                    code: other as char,
                })
            }
        };
        if let Some(i) = slot {
            self.refs[i] = Some(v.clone());
        } else if flag {
            self.refs.push(Some(v.clone()));
        }
        Ok(Some(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> Value {
        Value::Str(Rc::from(x))
    }

    #[test]
    fn scalars_in_every_spelling() {
        assert_eq!(loads(b"N"), Ok(Value::None));
        assert_eq!(loads(b"T"), Ok(Value::Bool(true)));
        assert_eq!(loads(b"F"), Ok(Value::Bool(false)));
        assert_eq!(loads(b"i\xff\xff\xff\xff"), Ok(Value::Int(-1)));
        assert_eq!(
            loads(b"I\x00\x00\x00\x00\x01\x00\x00\x00"),
            Ok(Value::Int(1 << 32))
        );
        // 2**40 = digits (0, 0, 1024) of 15 bits.
        assert_eq!(
            loads(b"l\x03\x00\x00\x00\x00\x00\x00\x00\x00\x04"),
            Ok(Value::Int(1 << 40))
        );
        assert_eq!(
            loads(b"l\xfd\xff\xff\xff\x00\x00\x00\x00\x00\x04"),
            Ok(Value::Int(-(1 << 40)))
        );
        assert_eq!(loads(b"f\x041.25"), Ok(Value::Float(1.25)));
        assert_eq!(
            loads(&[b"g".as_slice(), &1.5f64.to_le_bytes()].concat()),
            Ok(Value::Float(1.5))
        );
        assert_eq!(loads(b"z\x02ab"), Ok(s("ab")));
        assert_eq!(loads(b"Z\x02ab"), Ok(s("ab")));
        assert_eq!(loads(b"u\x02\x00\x00\x00\xc3\xa9"), Ok(s("é")));
        assert_eq!(loads(b"t\x01\x00\x00\x00x"), Ok(s("x")));
        assert_eq!(loads(b"a\x01\x00\x00\x00x"), Ok(s("x")));
        assert_eq!(
            loads(b"s\x02\x00\x00\x00\x00\xff"),
            Ok(Value::Bytes(Rc::from(&b"\x00\xff"[..])))
        );
    }

    #[test]
    fn containers_and_references() {
        // A flagged tuple takes index 0 before its contents; the string
        // inside takes index 1 and is referenced twice afterwards.
        let data = b"\xa9\x02\xfa\x01ar\x01\x00\x00\x00";
        let v = loads(data).unwrap();
        assert_eq!(v, Value::Tuple(vec![s("a"), s("a")].into()));
        // A dict ends at NULL; a later reference to index 0 (the dict itself)
        // from inside it is a cycle, refused.
        assert_eq!(
            loads(b"\xfbz\x01kr\x00\x00\x00\x000"),
            Err(MarshalError::BadRef { at: 4, index: 0 })
        );
        let d = loads(b"{z\x01ki\x07\x00\x00\x000").unwrap();
        assert_eq!(d.as_dict().unwrap(), &[(s("k"), Value::Int(7))]);
        assert_eq!(
            loads(b"[\x01\x00\x00\x00N").unwrap(),
            Value::List(vec![Value::None].into())
        );
    }

    #[test]
    fn damage_is_named_never_guessed() {
        assert!(matches!(
            loads(b"i\x01\x00"),
            Err(MarshalError::Truncated { .. })
        ));
        assert!(matches!(
            loads(b"(\xff\xff\xff\x7fN"),
            Err(MarshalError::Truncated { .. })
        ));
        assert!(matches!(
            loads(b"(\xff\xff\xff\xffN"),
            Err(MarshalError::BadLength { .. })
        ));
        assert_eq!(
            loads(b"c"),
            Err(MarshalError::UnknownType { at: 0, code: 'c' })
        );
        assert_eq!(loads(b"r\x05\x00\x00\x00").unwrap_err().offset(), 0);
        assert!(matches!(
            loads(b"u\x01\x00\x00\x00\xff"),
            Err(MarshalError::BadUtf8 { .. })
        ));
        assert!(matches!(
            loads(b"f\x03abc"),
            Err(MarshalError::BadNumber { .. })
        ));
        assert_eq!(loads(b"NN"), Err(MarshalError::Trailing { at: 1, left: 1 }));
        assert_eq!(loads(b"0"), Err(MarshalError::UnexpectedNull { at: 0 }));
        assert!(matches!(
            loads(b"{z\x01k0"),
            Err(MarshalError::UnexpectedNull { .. })
        ));
        // 2**75 does not fit 64 bits.
        assert!(matches!(
            loads(b"l\x06\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00"),
            Err(MarshalError::BadNumber { .. })
        ));
        let mut deep = Vec::new();
        for _ in 0..MAX_DEPTH + 2 {
            deep.extend_from_slice(b")\x01");
        }
        deep.push(b'N');
        assert!(matches!(loads(&deep), Err(MarshalError::TooDeep { .. })));
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = loads(&data);
        }
    }
}
