//! Event ids as resumption cursors.

use std::fmt;
use std::str::FromStr;

/// Longest cursor accepted, in bytes.
///
/// rmcp's own ids are at most 41 bytes (`u64/u64`); event stores of other
/// SDKs use UUIDs or `stream_index` pairs well under this. Anything longer is
/// treated as hostile rather than stored, echoed or logged.
pub const MAX_CURSOR_LEN: usize = 1024;

/// Why a string is not a usable event id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CursorParseError {
    /// The id is empty (an empty SSE `id:` clears the cursor; it never names one).
    #[error("event id is empty")]
    Empty,
    /// The id is longer than [`MAX_CURSOR_LEN`].
    #[error("event id is {len} bytes long, more than the {max} allowed")]
    TooLong {
        /// Length of the rejected input in bytes.
        len: usize,
        /// The limit, [`MAX_CURSOR_LEN`].
        max: usize,
    },
    /// The id is not UTF-8 (only reachable through [`EventCursor::from_bytes`]).
    #[error("event id is not valid UTF-8")]
    NotUtf8,
    /// The id contains a control character, which no SSE id or HTTP header can carry.
    #[error("event id contains a control character at byte {at}")]
    ControlCharacter {
        /// Byte offset of the first control character.
        at: usize,
    },
    /// An rmcp-style id (`N` or `N/M`) has a part that is not a decimal number.
    #[error("event id {id:?} is not `N` or `N/M` with decimal N and M")]
    NotDecimal {
        /// The rejected input (bounded by [`MAX_CURSOR_LEN`]).
        id: String,
    },
    /// An rmcp-style id has more than one `/`.
    #[error("event id {id:?} has more than one '/'")]
    ExtraSlash {
        /// The rejected input.
        id: String,
    },
    /// A part of an rmcp-style id does not fit in a `u64`.
    #[error("event id {id:?} overflows a 64-bit index")]
    Overflow {
        /// The rejected input.
        id: String,
    },
    /// A part has a leading zero, so the id would not round-trip through `Display`.
    #[error("event id {id:?} is not canonical (leading zero)")]
    NonCanonical {
        /// The rejected input.
        id: String,
    },
}

/// An event id in rmcp's own scheme: `N` on the standalone stream, `N/M` on
/// request stream `M`. `N` counts events on its stream, so the successor of
/// `N/M` is `N+1/M`. Serialized as that text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RmcpEventId {
    /// Position of the event on its stream.
    pub index: u64,
    /// The request stream, or `None` for the standalone (GET) stream.
    pub stream: Option<u64>,
}

impl RmcpEventId {
    /// An id on the standalone stream.
    pub const fn standalone(index: u64) -> Self {
        Self {
            index,
            stream: None,
        }
    }

    /// An id on request stream `stream`.
    pub const fn on_request_stream(index: u64, stream: u64) -> Self {
        Self {
            index,
            stream: Some(stream),
        }
    }

    /// The id the next event on the same stream must carry, if any.
    pub fn successor(self) -> Option<Self> {
        Some(Self {
            index: self.index.checked_add(1)?,
            stream: self.stream,
        })
    }

    /// Whether both ids belong to the same stream.
    pub fn same_stream(self, other: Self) -> bool {
        self.stream == other.stream
    }

    /// The id `index` on this id's stream.
    pub const fn with_index(self, index: u64) -> Self {
        Self {
            index,
            stream: self.stream,
        }
    }

    /// The id as it goes on the wire (`N` or `N/M`), as `Display` writes it
    /// but without the formatting machinery: a server writes one per event,
    /// and `fmt` cost it about 1.3 k instructions per tool call.
    pub fn encode(self) -> String {
        let mut out = String::with_capacity(41);
        push_decimal(&mut out, self.index);
        if let Some(stream) = self.stream {
            out.push('/');
            push_decimal(&mut out, stream);
        }
        out
    }
}

/// Appends `n` in decimal.
fn push_decimal(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
}

impl fmt::Display for RmcpEventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.stream {
            None => write!(f, "{}", self.index),
            Some(stream) => write!(f, "{}/{}", self.index, stream),
        }
    }
}

fn decimal(part: &str, whole: &str) -> Result<u64, CursorParseError> {
    if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CursorParseError::NotDecimal {
            id: whole.to_owned(),
        });
    }
    if part.len() > 1 && part.starts_with('0') {
        return Err(CursorParseError::NonCanonical {
            id: whole.to_owned(),
        });
    }
    part.parse().map_err(|_| CursorParseError::Overflow {
        id: whole.to_owned(),
    })
}

fn check_envelope(s: &str) -> Result<(), CursorParseError> {
    if s.is_empty() {
        return Err(CursorParseError::Empty);
    }
    if s.len() > MAX_CURSOR_LEN {
        return Err(CursorParseError::TooLong {
            len: s.len(),
            max: MAX_CURSOR_LEN,
        });
    }
    if let Some(at) = s
        .char_indices()
        .find(|(_, c)| c.is_control())
        .map(|(i, _)| i)
    {
        return Err(CursorParseError::ControlCharacter { at });
    }
    Ok(())
}

impl serde::Serialize for RmcpEventId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for RmcpEventId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl FromStr for RmcpEventId {
    type Err = CursorParseError;

    /// Strict: accepts exactly what `Display` produces.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        check_envelope(s)?;
        let mut parts = s.split('/');
        let index = decimal(parts.next().unwrap_or_default(), s)?;
        let stream = parts.next().map(|m| decimal(m, s)).transpose()?;
        if parts.next().is_some() {
            return Err(CursorParseError::ExtraSlash { id: s.to_owned() });
        }
        Ok(Self { index, stream })
    }
}

/// An event id from a server whose scheme is unknown (an event store, another
/// SDK). It can be sent back as `Last-Event-ID` and compared for equality, but
/// has no successor.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpaqueEventId(Box<str>);

impl OpaqueEventId {
    /// Validates `s` as an opaque id (non-empty, bounded, no control characters).
    pub fn new(s: &str) -> Result<Self, CursorParseError> {
        check_envelope(s)?;
        Ok(Self(s.into()))
    }

    /// The id as sent on the wire.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OpaqueEventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A resumption cursor: the id of the last event a client received.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EventCursor {
    /// An id in rmcp's scheme, whose successor is known.
    Rmcp(RmcpEventId),
    /// Any other id.
    Opaque(OpaqueEventId),
}

impl EventCursor {
    /// Classifies an id received from a server.
    ///
    /// Ids made only of digits and `/` are rmcp-style and must parse strictly
    /// (a malformed one is an error, not an opaque id, so that a typo never
    /// disables the successor check). Anything else that is a valid SSE id is
    /// [`Opaque`](EventCursor::Opaque).
    pub fn parse(s: &str) -> Result<Self, CursorParseError> {
        check_envelope(s)?;
        if s.bytes().all(|b| b.is_ascii_digit() || b == b'/') {
            s.parse().map(Self::Rmcp)
        } else {
            OpaqueEventId::new(s).map(Self::Opaque)
        }
    }

    /// [`parse`](Self::parse) for raw header bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, CursorParseError> {
        if bytes.len() > MAX_CURSOR_LEN {
            return Err(CursorParseError::TooLong {
                len: bytes.len(),
                max: MAX_CURSOR_LEN,
            });
        }
        let s = std::str::from_utf8(bytes).map_err(|_| CursorParseError::NotUtf8)?;
        Self::parse(s)
    }

    /// The id the next event must carry, where the scheme defines one.
    pub fn successor(&self) -> Option<Self> {
        match self {
            Self::Rmcp(id) => id.successor().map(Self::Rmcp),
            Self::Opaque(_) => None,
        }
    }

    /// The same id, judged as opaque: equal or not, nothing more. Ids only
    /// look like rmcp's counters until the server vouches for them.
    pub fn into_opaque(self) -> Self {
        match self {
            Self::Rmcp(id) => Self::Opaque(OpaqueEventId(id.to_string().into())),
            opaque @ Self::Opaque(_) => opaque,
        }
    }

    /// The rmcp-style id, if this is one.
    pub fn as_rmcp(&self) -> Option<RmcpEventId> {
        match self {
            Self::Rmcp(id) => Some(*id),
            Self::Opaque(_) => None,
        }
    }
}

impl fmt::Display for EventCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rmcp(id) => id.fmt(f),
            Self::Opaque(id) => id.fmt(f),
        }
    }
}

impl FromStr for EventCursor {
    type Err = CursorParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl From<RmcpEventId> for EventCursor {
    fn from(id: RmcpEventId) -> Self {
        Self::Rmcp(id)
    }
}

/// A run of consecutive events on one stream that can no longer be delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct LostRange {
    /// First lost event.
    pub first: RmcpEventId,
    /// Last lost event (inclusive, same stream as `first`).
    pub last: RmcpEventId,
}

impl LostRange {
    /// The events strictly between `after` and `before` on `after`'s stream,
    /// or `None` when they are adjacent.
    pub fn between(after: RmcpEventId, before: u64) -> Option<Self> {
        let first = after.index.checked_add(1)?;
        let last = before.checked_sub(1)?;
        (first <= last).then(|| Self {
            first: after.with_index(first),
            last: after.with_index(last),
        })
    }

    /// How many events the range holds.
    pub fn len(&self) -> u64 {
        self.last
            .index
            .saturating_sub(self.first.index)
            .saturating_add(1)
    }

    /// Always `false`: a range holds at least one event.
    pub fn is_empty(&self) -> bool {
        false
    }
}

impl fmt::Display for LostRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last {
            write!(f, "{} (1 event)", self.first)
        } else {
            write!(f, "{}..={} ({} events)", self.first, self.last, self.len())
        }
    }
}
