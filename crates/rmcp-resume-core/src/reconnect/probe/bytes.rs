//! The probe's fast path: one pass over the frame's bytes, with the answers
//! of the `serde_json` scan beside it.
//!
//! A response must be read whole (the worker drops a malformed one, and it
//! must not then count as the call's answer), so the probe validates every
//! byte of it. `serde_json` validating through `IgnoredAny` cost about 2 k
//! instructions per `tools/call` on the client, for a frame the worker parses
//! again. This reads the same grammar as `serde_json` reads an ignored value
//! (strings checked for control characters and escapes, `\u` as four hex
//! digits, numbers without leading zeros, no trailing commas, nothing but
//! whitespace after the object) and gives up, leaving the frame to the
//! `serde_json` scan, where its answer would need more: a top-level key
//! with an escape in it (whose text `serde_json` decodes before matching
//! it), or nesting deeper than [`MAX_DEPTH`].

/// Nesting this scan follows; deeper values go to the `serde_json` scan.
const MAX_DEPTH: u32 = 64;

/// Why the scan stopped short of an answer of its own.
enum Stop {
    /// Not one whole JSON value: not a response, whatever else it holds.
    Invalid,
    /// The `serde_json` scan must decide.
    Unsure,
}

/// The probe's answer for `data`, or `None` where the `serde_json` scan must
/// give it. Where it answers, it answers as that scan does.
pub(super) fn verdict(data: &[u8]) -> Option<bool> {
    match (Scanner { data, at: 0 }).message() {
        Ok(answer) => Some(answer),
        Err(Stop::Invalid) => Some(false),
        Err(Stop::Unsure) => None,
    }
}

struct Scanner<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.data.get(self.at).copied()
    }

    fn next(&mut self) -> Result<u8, Stop> {
        let byte = self.peek().ok_or(Stop::Invalid)?;
        self.at += 1;
        Ok(byte)
    }

    fn expect(&mut self, byte: u8) -> Result<(), Stop> {
        if self.next()? == byte {
            Ok(())
        } else {
            Err(Stop::Invalid)
        }
    }

    fn whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// The top-level object: whether its `id` is there once and not null,
    /// with no `method` but a null one (a non-null `method` decides at once).
    fn message(&mut self) -> Result<bool, Stop> {
        self.whitespace();
        self.expect(b'{')?;
        let mut id = None;
        let mut method_seen = false;
        self.whitespace();
        if self.peek() == Some(b'}') {
            self.at += 1;
        } else {
            loop {
                self.whitespace();
                self.expect(b'"')?;
                let key = self.plain_key()?;
                self.whitespace();
                self.expect(b':')?;
                self.whitespace();
                match key {
                    b"id" if id.is_some() => return Err(Stop::Invalid),
                    b"id" => id = Some(!self.null_or_value()?),
                    b"method" if method_seen => return Err(Stop::Invalid),
                    b"method" => {
                        method_seen = true;
                        if !self.null_or_value()? {
                            // A request or a notification: decided, as the
                            // `serde_json` scan decides it, before the rest.
                            return Ok(false);
                        }
                    }
                    _ => self.value()?,
                }
                self.whitespace();
                match self.next()? {
                    b',' => {}
                    b'}' => break,
                    _ => return Err(Stop::Invalid),
                }
            }
        }
        self.whitespace();
        if self.at != self.data.len() {
            return Err(Stop::Invalid);
        }
        Ok(id == Some(true))
    }

    /// A top-level key, after its opening quote. One with an escape is left
    /// to `serde_json`, which decodes it before matching (`"\u0069d"` is `id`).
    fn plain_key(&mut self) -> Result<&'a [u8], Stop> {
        let (data, start) = (self.data, self.at);
        loop {
            match self.next()? {
                b'"' => return Ok(&data[start..self.at - 1]),
                b'\\' => return Err(Stop::Unsure),
                0x00..=0x1f => return Err(Stop::Invalid),
                _ => {}
            }
        }
    }

    /// Whether the value here is `null`; any other value is read whole.
    fn null_or_value(&mut self) -> Result<bool, Stop> {
        if self.peek() == Some(b'n') {
            self.at += 1;
            self.literal(b"ull")?;
            return Ok(true);
        }
        self.value()?;
        Ok(false)
    }

    fn literal(&mut self, rest: &[u8]) -> Result<(), Stop> {
        let end = self.at + rest.len();
        if self.data.get(self.at..end) != Some(rest) {
            return Err(Stop::Invalid);
        }
        self.at = end;
        Ok(())
    }

    /// A string, after its opening quote, as `serde_json` ignores one.
    fn string(&mut self) -> Result<(), Stop> {
        loop {
            match self.next()? {
                b'"' => return Ok(()),
                b'\\' => match self.next()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'u' => {
                        for _ in 0..4 {
                            if !self.next()?.is_ascii_hexdigit() {
                                return Err(Stop::Invalid);
                            }
                        }
                    }
                    _ => return Err(Stop::Invalid),
                },
                0x00..=0x1f => return Err(Stop::Invalid),
                _ => {}
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
        self.at - start
    }

    /// A number, after its optional minus sign.
    fn number(&mut self) -> Result<(), Stop> {
        match self.next()? {
            // One leading zero, and no digit after it.
            b'0' if matches!(self.peek(), Some(b'0'..=b'9')) => return Err(Stop::Invalid),
            b'0' => {}
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return Err(Stop::Invalid),
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            if self.digits() == 0 {
                return Err(Stop::Invalid);
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            if self.digits() == 0 {
                return Err(Stop::Invalid);
            }
        }
        Ok(())
    }

    /// Any value, read whole without recursion: `open` holds one bit per
    /// open container, set for an object.
    fn value(&mut self) -> Result<(), Stop> {
        let mut open: u64 = 0;
        let mut depth = 0u32;
        loop {
            // One value, or the opening of a container.
            self.whitespace();
            let opened = match self.next()? {
                byte @ (b'{' | b'[') => {
                    self.whitespace();
                    let close = if byte == b'{' { b'}' } else { b']' };
                    if self.peek() == Some(close) {
                        self.at += 1;
                        false
                    } else {
                        if depth == MAX_DEPTH {
                            return Err(Stop::Unsure);
                        }
                        open = (open << 1) | u64::from(byte == b'{');
                        depth += 1;
                        if byte == b'{' {
                            self.member_key()?;
                        }
                        true
                    }
                }
                b'"' => {
                    self.string()?;
                    false
                }
                b'n' => {
                    self.literal(b"ull")?;
                    false
                }
                b't' => {
                    self.literal(b"rue")?;
                    false
                }
                b'f' => {
                    self.literal(b"alse")?;
                    false
                }
                b'-' => {
                    self.number()?;
                    false
                }
                b'0'..=b'9' => {
                    self.at -= 1;
                    self.number()?;
                    false
                }
                _ => return Err(Stop::Invalid),
            };
            if opened {
                continue;
            }
            // After a value: the next member, or the ends of containers.
            loop {
                if depth == 0 {
                    return Ok(());
                }
                let in_object = open & 1 == 1;
                self.whitespace();
                match self.next()? {
                    b',' => {
                        if in_object {
                            self.member_key()?;
                        }
                        break;
                    }
                    b'}' if in_object => {}
                    b']' if !in_object => {}
                    _ => return Err(Stop::Invalid),
                }
                open >>= 1;
                depth -= 1;
            }
        }
    }

    /// A nested object's key and its colon.
    fn member_key(&mut self) -> Result<(), Stop> {
        self.whitespace();
        self.expect(b'"')?;
        self.string()?;
        self.whitespace();
        self.expect(b':')
    }
}
