//! A reader for Python's `marshal` serialisation, the container of cProfile
//! and pstats files (`Profile.dump_stats`, `pstats.Stats.dump_stats`).
//!
//! The data types are read: None, booleans, ints (`i`, `I` and the
//! 15-bit-digit longs `l`), floats (text `f` and binary `g`), complex
//! numbers, bytes and strings in all their spellings, tuples, lists, dicts,
//! sets and references; code objects (Python 3.8 and later) only by their
//! name, file and first line. Since marshal version 3 an object
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
    /// A code object, kept by what names it (the pure-Python `profile`
    /// module keys its root entry by the code it ran).
    Code(Rc<Code>),
}

/// What names a code object: its name, file and first line.
#[derive(Clone, Debug, PartialEq)]
pub struct Code {
    /// `co_name`.
    pub name: String,
    /// `co_filename`.
    pub filename: String,
    /// `co_firstlineno`.
    pub firstlineno: i64,
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
            Value::Code(_) => "code",
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

    /// A code object's fields in the layout of Python 3.11 and later, or
    /// else of 3.8 to 3.10 (the stream does not say which wrote it; each
    /// layout's field types are checked, so only a true match reads).
    fn code(&mut self, depth: usize) -> R<Code> {
        let (pos, refs) = (self.pos, self.refs.len());
        match self.code_layout(depth, 5, 4, 3) {
            Ok(c) => Ok(c),
            Err(first) => {
                self.pos = pos;
                self.refs.truncate(refs);
                self.code_layout(depth, 6, 5, 1).map_err(|_| first)
            }
        }
    }

    /// One code object layout: `ints` int fields, the bytecode, `before`
    /// objects, the file name, the name, then (`after == 3`, Python 3.11+)
    /// the qualified name, the first line and two objects, or (`after ==
    /// 1`) the first line and one object.
    fn code_layout(&mut self, depth: usize, ints: usize, before: usize, after: usize) -> R<Code> {
        let at = self.pos as u64;
        let field = |r: &mut Self| -> R<Value> {
            let vat = r.pos as u64;
            r.object(depth + 1)?
                .ok_or(MarshalError::UnexpectedNull { at: vat })
        };
        for _ in 0..ints {
            self.i32("code object")?;
        }
        let bytecode = field(self)?;
        if !matches!(bytecode, Value::Bytes(_)) {
            return Err(MarshalError::UnknownType { at, code: 'c' });
        }
        for _ in 0..before {
            field(self)?;
        }
        let filename = field(self)?;
        let name = field(self)?;
        // 3.11+: the qualified name comes before the first line.
        let qualname_ok = if after == 3 {
            field(self)?.as_str().is_some()
        } else {
            true
        };
        let firstlineno = i64::from(self.i32("code object")?);
        for _ in 0..(if after == 3 { 2 } else { after }) {
            field(self)?;
        }
        match (filename.as_str(), name.as_str(), qualname_ok) {
            (Some(f), Some(n), true) => Ok(Code {
                name: n.to_owned(),
                filename: f.to_owned(),
                firstlineno,
            }),
            _ => Err(MarshalError::UnknownType { at, code: 'c' }),
        }
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
        let slot = if flag && matches!(ty, b'(' | b')' | b'[' | b'{' | b'<' | b'>' | b'c') {
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
            b'c' => Value::Code(Rc::new(self.code(depth)?)),
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
            loads(b"d"),
            Err(MarshalError::UnknownType { at: 0, code: 'd' })
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

    #[test]
    fn code_objects_read_by_their_names() {
        // `marshal.dumps(compile("def f():\n    return 1\n", "f.py", "exec"))`
        // from Python 3.11: a module code object holding f's, with references.
        let hex = "e30000000000000000000000000100000000000000f30c0000009700640084005a00640153002902630000000000000000000000000100000003000000f30600000097006401530029024ee901000000a9007204000000f300000000fa04662e7079da016672070000000100000073070000008000d80b0c883172050000004e29017207000000720400000072050000007206000000fa083c6d6f64756c653e720800000001000000731e000000f003010101f00201010df00001010df00001010df00001010df00001010d7205000000";
        let data: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let Value::Code(c) = loads(&data).unwrap() else {
            panic!("not a code object");
        };
        assert_eq!(
            (c.name.as_str(), c.filename.as_str(), c.firstlineno),
            ("<module>", "f.py", 1)
        );
        // The 3.8-3.10 layout: six ints, bytecode, five objects, file,
        // name, first line, line table.
        let mut old = b"c".to_vec();
        old.extend_from_slice(&[0u8; 24]);
        old.extend_from_slice(b"s\x01\x00\x00\x00\x00");
        for _ in 0..5 {
            old.extend_from_slice(b")\x00");
        }
        old.extend_from_slice(b"z\x04g.pyz\x01g");
        old.extend_from_slice(&7i32.to_le_bytes());
        old.extend_from_slice(b"s\x00\x00\x00\x00");
        let Value::Code(c) = loads(&old).unwrap() else {
            panic!("not a code object");
        };
        assert_eq!((c.name.as_str(), c.firstlineno), ("g", 7));
        // Neither layout: refused.
        assert!(loads(b"c\x00\x00\x00\x00N").is_err());
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = loads(&data);
        }
    }
}
