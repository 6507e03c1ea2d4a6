//! A reader of Go's `encoding/gob` streams, as far as a stream of one
//! struct type needs: the messages, the type definitions that precede the
//! values, and a cursor that decodes or skips any value by its type id.
//!
//! The wire format (Go's package documentation): a stream is a sequence of
//! messages, each an unsigned byte count and that many bytes. A message
//! starts with a signed type id: negative, it defines type `-id` (a
//! `wireType` value follows); positive, a value of that type follows.
//! Unsigned integers below 128 are one byte; larger ones are a byte
//! holding the negated count of big-endian bytes that follow. A signed
//! integer is carried in an unsigned one, its sign in bit 0. A struct is a
//! sequence of (field-number delta, value) pairs ended by a zero delta, so
//! zero-valued fields are absent. Strings and byte slices are a count and
//! bytes; slices and arrays a count and elements; maps a count and key,
//! element pairs. A type with its own `GobEncode` (`time.Time`) is sent as
//! a byte slice of what that method wrote.
//!
//! Everything is bounded: a message is read whole only up to a limit, a
//! count can never exceed what is left of its message, and nesting is
//! limited, so no input makes the reader allocate without bound, recurse
//! without end or panic.

use std::collections::HashMap;
use std::io::BufRead;

/// Type ids gob predefines (`encoding/gob/type.go`).
pub(crate) mod id {
    /// `bool`.
    pub const BOOL: i64 = 1;
    /// Every signed integer type.
    pub const INT: i64 = 2;
    /// Every unsigned integer type.
    pub const UINT: i64 = 3;
    /// `float32` and `float64`.
    pub const FLOAT: i64 = 4;
    /// `[]byte`.
    pub const BYTES: i64 = 5;
    /// `string`.
    pub const STRING: i64 = 6;
    /// `complex64` and `complex128`.
    pub const COMPLEX: i64 = 7;
    /// `interface{}` values.
    pub const INTERFACE: i64 = 8;
}

/// Deepest nesting of types a value may have: far beyond any Go struct
/// people encode, small enough that skipping a value cannot overflow the stack.
const MAX_DEPTH: u32 = 64;

/// A type a stream defined.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum WireType {
    /// A struct: its name and (field name, type id) in field-number order.
    Struct {
        name: String,
        fields: Vec<(String, i64)>,
    },
    /// A slice of `elem`.
    Slice { elem: i64 },
    /// An array of `len` `elem`s.
    Array { elem: i64, len: i64 },
    /// A map.
    Map { key: i64, elem: i64 },
    /// A type that encodes itself (`GobEncoder`, `BinaryMarshaler`,
    /// `TextMarshaler`): its bytes, as the type's own method wrote them.
    Opaque { name: String },
}

/// Why a stream could not be read: where (byte offset of the message in
/// the stream) and what.
#[derive(Debug)]
pub(crate) enum GobError {
    /// Reading failed.
    Io(std::io::Error),
    /// The stream breaks the format at `offset`.
    Bad { offset: u64, reason: String },
}

/// A cursor over one message.
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Cursor<'a> {
        Cursor { buf, pos: 0 }
    }

    /// Bytes not read yet.
    pub(crate) fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Position in the message, for error messages.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or("the message ends inside a value")?;
        self.pos += 1;
        Ok(b)
    }

    /// `n` bytes.
    pub(crate) fn take(&mut self, n: u64) -> Result<&'a [u8], String> {
        if n > self.left() as u64 {
            return Err(format!(
                "a count of {n} bytes, but {} are left in the message",
                self.left()
            ));
        }
        let n = n as usize;
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// An unsigned integer.
    pub(crate) fn uint(&mut self) -> Result<u64, String> {
        let b = self.byte()?;
        if b < 0x80 {
            return Ok(u64::from(b));
        }
        let n = (b as i8).unsigned_abs();
        if n > 8 {
            return Err(format!("an integer of {n} bytes (gob's have at most 8)"));
        }
        let mut v = 0u64;
        for &x in self.take(u64::from(n))? {
            v = (v << 8) | u64::from(x);
        }
        Ok(v)
    }

    /// A signed integer.
    pub(crate) fn int(&mut self) -> Result<i64, String> {
        let u = self.uint()?;
        Ok(if u & 1 == 1 {
            !((u >> 1) as i64)
        } else {
            (u >> 1) as i64
        })
    }

    /// A count of items, each at least one byte long (so a count beyond
    /// what is left of the message is an error, not an allocation).
    fn count(&mut self) -> Result<u64, String> {
        let n = self.uint()?;
        if n > self.left() as u64 {
            return Err(format!(
                "a count of {n} items, but {} bytes are left in the message",
                self.left()
            ));
        }
        Ok(n)
    }

    /// A string or byte slice.
    pub(crate) fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.uint()?;
        self.take(n)
    }

    /// A string (invalid UTF-8 replaced, as it only ever reaches a message
    /// or a label).
    pub(crate) fn string(&mut self) -> Result<String, String> {
        Ok(String::from_utf8_lossy(self.bytes()?).into_owned())
    }

    /// Walks a struct value's fields: `field(cursor, number)` must consume
    /// the value of field `number`. Field numbers only grow.
    pub(crate) fn fields(
        &mut self,
        mut field: impl FnMut(&mut Cursor<'a>, u64) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut number: i64 = -1;
        loop {
            let delta = self.uint()?;
            if delta == 0 {
                return Ok(());
            }
            let next = i64::try_from(delta)
                .ok()
                .and_then(|d| number.checked_add(d))
                .filter(|&n| n < 1 << 20)
                .ok_or_else(|| format!("a field-number delta of {delta}"))?;
            number = next;
            field(self, number as u64)?;
        }
    }

    /// Skips one value of type `ty`.
    pub(crate) fn skip(&mut self, types: &Types, ty: i64, depth: u32) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("values nested more than {MAX_DEPTH} deep"));
        }
        match ty {
            id::BOOL | id::INT | id::UINT | id::FLOAT => self.uint().map(drop),
            id::COMPLEX => self.uint().and_then(|_| self.uint()).map(drop),
            id::BYTES | id::STRING => self.bytes().map(drop),
            id::INTERFACE => {
                // A concrete type's name (empty: nil), its id, and the
                // value's length; the value itself is skipped by length.
                if self.bytes()?.is_empty() {
                    return Ok(());
                }
                self.int()?;
                self.bytes().map(drop)
            }
            _ => match types.get(ty)? {
                WireType::Struct { fields, .. } => {
                    let fields = fields.clone();
                    self.fields(|c, n| match fields.get(n as usize) {
                        Some((_, t)) => c.skip(types, *t, depth + 1),
                        None => Err(format!(
                            "field {n} of a struct with {} fields",
                            fields.len()
                        )),
                    })
                }
                WireType::Slice { elem } | WireType::Array { elem, .. } => {
                    let elem = *elem;
                    for _ in 0..self.count()? {
                        self.skip(types, elem, depth + 1)?;
                    }
                    Ok(())
                }
                WireType::Map { key, elem } => {
                    let (key, elem) = (*key, *elem);
                    for _ in 0..self.count()? {
                        self.skip(types, key, depth + 1)?;
                        self.skip(types, elem, depth + 1)?;
                    }
                    Ok(())
                }
                WireType::Opaque { .. } => self.bytes().map(drop),
            },
        }
    }
}

/// The types a stream has defined so far.
#[derive(Debug, Default)]
pub(crate) struct Types {
    defined: HashMap<i64, WireType>,
    /// Definitions read so far: what a cached reading plan is checked against.
    generation: u64,
}

/// Most types a stream may define: a struct type brings a handful; this
/// bounds memory against a stream of definitions only.
const MAX_TYPES: usize = 10_000;

impl Types {
    /// How many definitions have been read.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// The type `ty`, which must have been defined.
    pub(crate) fn get(&self, ty: i64) -> Result<&WireType, String> {
        self.defined
            .get(&ty)
            .ok_or_else(|| format!("type id {ty} is used before it is defined"))
    }

    /// Reads a `wireType` value (the rest of a type-definition message)
    /// and records it as `ty`.
    fn define(&mut self, ty: i64, c: &mut Cursor<'_>) -> Result<(), String> {
        if ty <= id::INTERFACE || (16..=23).contains(&ty) {
            return Err(format!("a definition of predefined type id {ty}"));
        }
        let mut found = None;
        c.fields(|c, n| {
            if found.is_some() {
                return Err("a wireType with two kinds".into());
            }
            found = Some(match n {
                0 => {
                    let v = kind(c, &[1, 2])?.1;
                    WireType::Array {
                        elem: v[0],
                        len: v[1],
                    }
                }
                1 => WireType::Slice {
                    elem: kind(c, &[1])?.1[0],
                },
                2 => struct_type(c)?,
                3 => {
                    let v = kind(c, &[1, 2])?.1;
                    WireType::Map {
                        key: v[0],
                        elem: v[1],
                    }
                }
                4..=6 => WireType::Opaque {
                    name: kind(c, &[])?.0,
                },
                _ => return Err(format!("wireType field {n} (gob has 7)")),
            });
            Ok(())
        })?;
        let t = found.ok_or("an empty wireType")?;
        if self.defined.len() >= MAX_TYPES && !self.defined.contains_key(&ty) {
            return Err(format!("more than {MAX_TYPES} types defined"));
        }
        // A second definition of an id comes from concatenated streams
        // (`cat a.bin b.bin`, which vegeta reads too): the later one holds.
        self.defined.insert(ty, t);
        self.generation += 1;
        Ok(())
    }
}

/// A `CommonType` (name, id) as field 0 of a kind's struct, then its
/// integer fields `ints` (field numbers): (name, their values).
fn kind(c: &mut Cursor<'_>, ints: &[u64]) -> Result<(String, Vec<i64>), String> {
    let mut name = String::new();
    let mut values = vec![0i64; ints.len()];
    c.fields(|c, n| {
        if n == 0 {
            name = common_type(c)?;
            return Ok(());
        }
        match ints.iter().position(|&i| i == n) {
            Some(i) => {
                values[i] = c.int()?;
                Ok(())
            }
            None => Err(format!("field {n} of a type definition")),
        }
    })?;
    Ok((name, values))
}

/// `CommonType{Name string; Id typeId}`: the name.
fn common_type(c: &mut Cursor<'_>) -> Result<String, String> {
    let mut name = String::new();
    c.fields(|c, n| match n {
        0 => {
            name = c.string()?;
            Ok(())
        }
        1 => c.int().map(drop),
        _ => Err(format!("field {n} of a CommonType")),
    })?;
    Ok(name)
}

/// `structType{CommonType; Field []*fieldType}`.
fn struct_type(c: &mut Cursor<'_>) -> Result<WireType, String> {
    let mut name = String::new();
    let mut fields = Vec::new();
    c.fields(|c, n| match n {
        0 => {
            name = common_type(c)?;
            Ok(())
        }
        1 => {
            for _ in 0..c.count()? {
                let mut field = (String::new(), 0i64);
                c.fields(|c, n| match n {
                    0 => {
                        field.0 = c.string()?;
                        Ok(())
                    }
                    1 => {
                        field.1 = c.int()?;
                        Ok(())
                    }
                    _ => Err(format!("field {n} of a fieldType")),
                })?;
                fields.push(field);
            }
            Ok(())
        }
        _ => Err(format!("field {n} of a structType")),
    })?;
    Ok(WireType::Struct { name, fields })
}

/// A gob stream read a message at a time.
pub(crate) struct Stream<R> {
    reader: R,
    /// Byte offset of the next message.
    offset: u64,
    /// Largest message accepted, bytes.
    max_message: u64,
    message: Vec<u8>,
    /// The types defined so far.
    pub(crate) types: Types,
}

impl<R: BufRead> Stream<R> {
    pub(crate) fn new(reader: R, max_message: u64) -> Stream<R> {
        Stream {
            reader,
            offset: 0,
            max_message,
            message: Vec::new(),
            types: Types::default(),
        }
    }

    fn bad(&self, at: u64, reason: impl Into<String>) -> GobError {
        GobError::Bad {
            offset: at,
            reason: reason.into(),
        }
    }

    /// Reads up to `buf.len()` bytes; how many it got before the end.
    fn fill(&mut self, buf: &mut [u8]) -> Result<usize, GobError> {
        let mut got = 0;
        while got < buf.len() {
            match self.reader.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(GobError::Io(e)),
            }
        }
        Ok(got)
    }

    /// The next value message: (its type id, the byte offset where it
    /// starts, a cursor after the type id); type definitions on the way
    /// are recorded. `None` at the end of the stream.
    pub(crate) fn next_value(&mut self) -> Result<Option<(i64, u64, Vec<u8>)>, GobError> {
        loop {
            let at = self.offset;
            let mut first = [0u8; 1];
            if self.fill(&mut first)? == 0 {
                return Ok(None);
            }
            let (count, head) = if first[0] < 0x80 {
                (u64::from(first[0]), 1u64)
            } else {
                let n = (first[0] as i8).unsigned_abs() as usize;
                if n > 8 {
                    return Err(self.bad(at, "not a gob message length"));
                }
                let mut b = [0u8; 8];
                if self.fill(&mut b[..n])? < n {
                    return Err(self.bad(at, "the stream ends inside a message length"));
                }
                (
                    b[..n].iter().fold(0u64, |v, &x| (v << 8) | u64::from(x)),
                    1 + n as u64,
                )
            };
            if count == 0 {
                return Err(self.bad(at, "an empty message"));
            }
            if count > self.max_message {
                return Err(self.bad(
                    at,
                    format!(
                        "a message of {count} bytes, over the limit of {} (KEISOKU_MAX_LINE raises it)",
                        self.max_message
                    ),
                ));
            }
            let mut message = std::mem::take(&mut self.message);
            message.clear();
            message.resize(count as usize, 0);
            let got = self.fill(&mut message)?;
            if got < message.len() {
                return Err(self.bad(
                    at,
                    format!(
                        "the stream ends inside a message ({got} of its {count} bytes): the file is cut short"
                    ),
                ));
            }
            self.offset = at + head + count;
            let mut c = Cursor::new(&message);
            let ty = c.int().map_err(|e| self.bad(at, e))?;
            if ty < 0 {
                let defined = ty
                    .checked_neg()
                    .ok_or_else(|| self.bad(at, "type id out of range"))?;
                let mut types = std::mem::take(&mut self.types);
                let r = types.define(defined, &mut c);
                self.types = types;
                r.map_err(|e| self.bad(at, format!("type definition: {e}")))?;
                if c.left() != 0 {
                    return Err(self.bad(at, "bytes after a type definition"));
                }
                self.message = message;
                continue;
            }
            if ty == 0 {
                return Err(self.bad(at, "a value of type id 0"));
            }
            let pos = c.pos();
            message.drain(..pos);
            return Ok(Some((ty, at, message)));
        }
    }

    /// Hands a message buffer back for reuse.
    pub(crate) fn recycle(&mut self, message: Vec<u8>) {
        self.message = message;
    }
}
