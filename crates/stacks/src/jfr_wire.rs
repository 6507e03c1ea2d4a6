//! The JFR wire format below the events: big-endian fixed-width numbers,
//! JFR's LEB128 variant for compressed integers, the string encodings, the
//! metadata event (class and field descriptors) and values read generically
//! from those descriptors, so constant pools and events of any type, from
//! any JDK or async-profiler, are walked by the recording's own layout.

use rustc_hash::FxHashMap;

/// A decoding problem at an absolute byte offset: what was expected there.
#[derive(Debug)]
pub(super) struct Bad(pub usize, pub String);

/// Result of the wire readers.
pub(super) type Wire<T> = std::result::Result<T, Bad>;

/// Deepest nesting of inline (not pooled) objects: real recordings nest
/// three levels (stack trace, frame, method reference); a self-containing
/// class must fail, not overflow the stack.
const MAX_DEPTH: u32 = 16;

/// A cursor over one region of the input (a chunk, an event) that reports
/// errors with absolute offsets.
pub(super) struct Cur<'a> {
    buf: &'a [u8],
    pos: usize,
    end: usize,
    /// Whether integers are LEB128-compressed (the chunk header's flag).
    pub compressed: bool,
}

impl<'a> Cur<'a> {
    /// A cursor over `buf[pos..end]`.
    pub fn new(buf: &'a [u8], pos: usize, end: usize, compressed: bool) -> Self {
        Cur {
            buf,
            pos,
            end: end.min(buf.len()),
            compressed,
        }
    }

    /// The absolute offset of the next byte.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left in the region.
    pub fn remaining(&self) -> usize {
        self.end.saturating_sub(self.pos)
    }

    fn bytes(&mut self, n: usize, what: &str) -> Wire<&'a [u8]> {
        if n > self.remaining() {
            return Err(Bad(self.pos, format!("{what} (the data ends inside it)")));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// One byte.
    pub fn u8(&mut self) -> Wire<u8> {
        Ok(self.bytes(1, "a byte")?[0])
    }

    /// A big-endian number of `n` (at most 8) bytes.
    pub fn be(&mut self, n: usize) -> Wire<u64> {
        let b = self.bytes(n, "a fixed-width number")?;
        Ok(b.iter().fold(0u64, |a, &x| a << 8 | u64::from(x)))
    }

    /// JFR's variable-length integer: seven bits a byte, low first, the
    /// high bit saying more follow; the ninth byte carries eight bits.
    fn varint(&mut self) -> Wire<u64> {
        let start = self.pos;
        let mut v = 0u64;
        for i in 0..9 {
            let Ok(b) = self.u8() else {
                return Err(Bad(
                    start,
                    "a compressed integer (the data ends inside it)".into(),
                ));
            };
            if i == 8 {
                return Ok(v | u64::from(b) << 56);
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Ok(v)
    }

    /// A `long` as the chunk stores it.
    pub fn long(&mut self) -> Wire<i64> {
        if self.compressed {
            Ok(self.varint()? as i64)
        } else {
            Ok(self.be(8)? as i64)
        }
    }

    /// An `int` as the chunk stores it.
    pub fn int(&mut self) -> Wire<i32> {
        if self.compressed {
            Ok(self.varint()? as i32)
        } else {
            Ok(self.be(4)? as i32)
        }
    }

    /// A `short` or `char` as the chunk stores it.
    fn short(&mut self) -> Wire<i16> {
        if self.compressed {
            Ok(self.varint()? as i16)
        } else {
            Ok(self.be(2)? as i16)
        }
    }

    /// A count (of elements, attributes, strings) that cannot exceed the
    /// bytes left, each element taking at least one byte.
    pub fn count(&mut self, what: &str) -> Wire<usize> {
        let at = self.pos;
        let n = self.int()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.remaining())
            .ok_or_else(|| Bad(at, format!("a count of {what} within the data (got {n})")))
    }

    /// A string in one of JFR's encodings; a reference into the string
    /// constant pool comes back as [`Text::Pooled`].
    pub fn string(&mut self) -> Wire<Text> {
        let at = self.pos;
        match self.u8()? {
            0 => Ok(Text::Null),
            1 => Ok(Text::Inline(Box::from(""))),
            2 => Ok(Text::Pooled(self.long()?)),
            3 | 5 => {
                let latin1 = self.buf[at] == 5;
                let n = self.count("string bytes")?;
                let b = self.bytes(n, "string bytes")?;
                let s: Box<str> = if latin1 {
                    b.iter().map(|&c| char::from(c)).collect::<String>().into()
                } else {
                    String::from_utf8_lossy(b).into()
                };
                Ok(Text::Inline(s))
            }
            4 => {
                let n = self.count("string chars")?;
                let mut units = Vec::with_capacity(n);
                for _ in 0..n {
                    units.push(self.short()? as u16);
                }
                Ok(Text::Inline(String::from_utf16_lossy(&units).into()))
            }
            e => Err(Bad(at, format!("a string encoding 0 to 5 (got {e})"))),
        }
    }
}

/// A string value.
#[derive(Clone, Debug)]
pub(super) enum Text {
    /// No string.
    Null,
    /// The characters themselves.
    Inline(Box<str>),
    /// A key into the `java.lang.String` constant pool.
    Pooled(i64),
}

/// One value read by its descriptor.
#[derive(Clone, Debug)]
pub(super) enum Value {
    /// Any integer type (boolean, byte, char, short, int, long).
    Int(i64),
    /// float or double (read past; no sample needs one).
    Float,
    /// A string.
    Str(Text),
    /// A reference into the constant pool of a type: (type id, key).
    Ref(u64, i64),
    /// An inline object: its type id and its fields in descriptor order.
    Obj(u64, Vec<Value>),
    /// An array field.
    Arr(Vec<Value>),
}

/// How a type's values are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// `boolean` or `byte`: one byte.
    Byte,
    /// `short` or `char`.
    Short,
    /// `int`.
    Int,
    /// `long`.
    Long,
    /// `float`: four bytes.
    Float,
    /// `double`: eight bytes.
    Double,
    /// `java.lang.String`.
    String,
    /// A class with fields.
    Object,
}

/// One field of a class descriptor.
#[derive(Clone, Debug)]
pub(super) struct Field {
    /// Its name (`startTime`, `stackTrace`).
    pub name: Box<str>,
    /// Its type id.
    pub ty: u64,
    /// Whether values are keys into the type's constant pool.
    pub pooled: bool,
    /// Whether it is an array.
    pub array: bool,
}

/// One class descriptor of the metadata event.
#[derive(Clone, Debug)]
pub(super) struct Class {
    /// Its name (`jdk.ExecutionSample`, `java.lang.Thread`).
    pub name: Box<str>,
    /// How values are stored.
    pub kind: Kind,
    /// Its fields, in the order values are written.
    pub fields: Vec<Field>,
}

impl Class {
    /// The index of the field called `name`.
    pub fn field(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| &*f.name == name)
    }
}

/// The classes of a chunk by type id.
#[derive(Default, Debug)]
pub(super) struct Meta {
    /// Every class by id.
    pub classes: FxHashMap<u64, Class>,
}

/// A metadata element: name, attributes, children.
struct Element {
    name: usize,
    attrs: Vec<(usize, usize)>,
    children: Vec<Element>,
}

fn element(c: &mut Cur<'_>, depth: u32) -> Wire<Element> {
    if depth > MAX_DEPTH {
        return Err(Bad(
            c.pos(),
            "metadata elements nested at most 16 deep".into(),
        ));
    }
    let idx = |c: &mut Cur<'_>| -> Wire<usize> {
        let at = c.pos();
        usize::try_from(c.int()?).map_err(|_| Bad(at, "a string index".into()))
    };
    let name = idx(c)?;
    let n = c.count("metadata attributes")?;
    let mut attrs = Vec::with_capacity(n);
    for _ in 0..n {
        attrs.push((idx(c)?, idx(c)?));
    }
    let n = c.count("metadata children")?;
    let mut children = Vec::with_capacity(n);
    for _ in 0..n {
        children.push(element(c, depth + 1)?);
    }
    Ok(Element {
        name,
        attrs,
        children,
    })
}

impl Meta {
    /// Reads the metadata event whose size field is at `c`'s position.
    pub fn read(c: &mut Cur<'_>) -> Wire<Meta> {
        let start = c.pos();
        let size = c.int()?;
        let ty = c.long()?;
        if ty != 0 {
            return Err(Bad(start, format!("the metadata event (type 0, got {ty})")));
        }
        let end = usize::try_from(size)
            .ok()
            .and_then(|s| start.checked_add(s))
            .filter(|&e| e > c.pos() && e <= c.end)
            .ok_or_else(|| {
                Bad(
                    start,
                    format!("a metadata event size within the chunk (got {size})"),
                )
            })?;
        let mut c = Cur::new(c.buf, c.pos(), end, c.compressed);
        for _ in 0..3 {
            c.long()?; // start time, duration, metadata id
        }
        let n = c.count("metadata strings")?;
        let mut strings: Vec<Box<str>> = Vec::with_capacity(n);
        for _ in 0..n {
            let at = c.pos();
            strings.push(match c.string()? {
                Text::Inline(s) => s,
                Text::Null => Box::from(""),
                Text::Pooled(_) => {
                    return Err(Bad(at, "an inline string in the metadata".into()));
                }
            });
        }
        let root = element(&mut c, 0)?;
        let s = |i: usize| strings.get(i).map_or("", |s| &**s);
        let attr = |e: &Element, key: &str| {
            e.attrs
                .iter()
                .find(|&&(k, _)| s(k) == key)
                .map(|&(_, v)| s(v))
        };
        let mut meta = Meta::default();
        let mut stack: Vec<&Element> = vec![&root];
        while let Some(e) = stack.pop() {
            if s(e.name) != "class" {
                stack.extend(e.children.iter());
                continue;
            }
            let (Some(name), Some(id)) =
                (attr(e, "name"), attr(e, "id").and_then(|i| i.parse().ok()))
            else {
                return Err(Bad(
                    start,
                    "class descriptors with a name and a numeric id".into(),
                ));
            };
            let mut fields = Vec::new();
            for f in e.children.iter().filter(|f| s(f.name) == "field") {
                let (Some(fname), Some(fty)) = (
                    attr(f, "name"),
                    attr(f, "class").and_then(|i| i.parse().ok()),
                ) else {
                    return Err(Bad(
                        start,
                        format!("fields of {name} with a name and a numeric class"),
                    ));
                };
                fields.push(Field {
                    name: fname.into(),
                    ty: fty,
                    pooled: attr(f, "constantPool") == Some("true"),
                    array: attr(f, "dimension") == Some("1"),
                });
            }
            let kind = match name {
                "boolean" | "byte" => Kind::Byte,
                "char" | "short" => Kind::Short,
                "int" => Kind::Int,
                "long" => Kind::Long,
                "float" => Kind::Float,
                "double" => Kind::Double,
                "java.lang.String" => Kind::String,
                _ => Kind::Object,
            };
            meta.classes.insert(
                id,
                Class {
                    name: name.into(),
                    kind,
                    fields,
                },
            );
        }
        // Every field's type must be described, or values cannot be walked.
        for c in meta.classes.values() {
            if let Some(f) = c.fields.iter().find(|f| !meta.classes.contains_key(&f.ty)) {
                return Err(Bad(
                    start,
                    format!(
                        "a descriptor for type {} (field {}.{})",
                        f.ty, c.name, f.name
                    ),
                ));
            }
        }
        Ok(meta)
    }

    /// The id of the class called `name`.
    pub fn id_of(&self, name: &str) -> Option<u64> {
        self.classes
            .iter()
            .find(|(_, c)| &*c.name == name)
            .map(|(&id, _)| id)
    }

    /// Reads one value of type `ty` stored inline.
    pub fn value(&self, c: &mut Cur<'_>, ty: u64, depth: u32) -> Wire<Value> {
        let at = c.pos();
        let Some(class) = self.classes.get(&ty) else {
            return Err(Bad(
                at,
                format!("a value of a described type (type {ty} is not)"),
            ));
        };
        Ok(match class.kind {
            Kind::Byte => Value::Int(i64::from(c.u8()? as i8)),
            Kind::Short => Value::Int(i64::from(c.short()?)),
            Kind::Int => Value::Int(i64::from(c.int()?)),
            Kind::Long => Value::Int(c.long()?),
            Kind::Float => {
                c.be(4)?;
                Value::Float
            }
            Kind::Double => {
                c.be(8)?;
                Value::Float
            }
            Kind::String => Value::Str(c.string()?),
            Kind::Object => {
                if depth > MAX_DEPTH {
                    return Err(Bad(at, format!("{} nested at most 16 deep", class.name)));
                }
                let mut fields = Vec::with_capacity(class.fields.len());
                for f in &class.fields {
                    fields.push(self.field(c, f, depth + 1)?);
                }
                Value::Obj(ty, fields)
            }
        })
    }

    /// Reads one field's value: a pool key, an inline value, or an array of either.
    pub fn field(&self, c: &mut Cur<'_>, f: &Field, depth: u32) -> Wire<Value> {
        let one = |c: &mut Cur<'_>| -> Wire<Value> {
            if f.pooled {
                Ok(Value::Ref(f.ty, c.long()?))
            } else {
                self.value(c, f.ty, depth)
            }
        };
        if !f.array {
            return one(c);
        }
        let n = c.count("array elements")?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(one(c)?);
        }
        Ok(Value::Arr(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_integers_take_eight_bits_in_the_ninth_byte() {
        let mut b = vec![0xffu8; 8];
        b.push(0xff);
        let mut c = Cur::new(&b, 0, b.len(), true);
        assert_eq!(c.long().unwrap(), -1);
        let b = [0x96, 0x01];
        assert_eq!(Cur::new(&b, 0, 2, true).long().unwrap(), 150);
        let b = [0x80];
        assert!(Cur::new(&b, 0, 1, true).long().is_err());
        let b = [0, 0, 0, 150];
        assert_eq!(Cur::new(&b, 0, 4, false).int().unwrap(), 150);
    }

    #[test]
    fn strings_in_every_encoding() {
        let b = [0, 1, 3, 2, b'h', b'i', 5, 1, 0xe9, 4, 2, 0x68, 0x69, 2, 7];
        let mut c = Cur::new(&b, 0, b.len(), true);
        assert!(matches!(c.string().unwrap(), Text::Null));
        assert!(matches!(c.string().unwrap(), Text::Inline(s) if s.is_empty()));
        assert!(matches!(c.string().unwrap(), Text::Inline(s) if &*s == "hi"));
        assert!(matches!(c.string().unwrap(), Text::Inline(s) if &*s == "é"));
        assert!(matches!(c.string().unwrap(), Text::Inline(s) if &*s == "hi"));
        assert!(matches!(c.string().unwrap(), Text::Pooled(7)));
        let bad = [9u8];
        assert!(Cur::new(&bad, 0, 1, true).string().is_err());
    }

    #[test]
    fn counts_cannot_exceed_the_data() {
        let b = [100u8, 1, 2];
        assert!(Cur::new(&b, 0, b.len(), true).count("x").is_err());
        let b = [0x7f, 0x7f, 0x7f, 0x7f, 0x0f];
        assert!(Cur::new(&b, 0, b.len(), true).count("x").is_err());
    }
}
