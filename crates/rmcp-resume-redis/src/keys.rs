//! Where a session lives in Redis.
//!
//! Every key of a session carries the session id as its hash tag (`{…}`), so
//! that all of them sit in one Redis Cluster slot and one script may touch
//! them together.

use rmcp_resume_core::resumption::StreamId;

/// The keys of one session, under a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionKeys {
    base: String,
}

impl SessionKeys {
    /// The keys of `session` under `prefix`.
    ///
    /// A session id holding `{` or `}` would move the hash tag, so those
    /// two characters are replaced; rmcp's ids never contain them.
    pub(crate) fn new(prefix: &str, session: &str) -> Self {
        // Built once per commit and read: one allocation, no formatting.
        let mut base = String::with_capacity(prefix.len() + session.len() + 4);
        base.push_str(prefix);
        base.push_str(":{");
        base.extend(
            session
                .chars()
                .map(|c| if matches!(c, '{' | '}') { '_' } else { c }),
        );
        base.push_str("}:");
        Self { base }
    }

    /// The prefix the scripts build the other keys from.
    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// The lease epoch counter; its presence means the session is known.
    pub(crate) fn epoch(&self) -> String {
        format!("{}epoch", self.base)
    }

    /// [`epoch`](Self::epoch) as a command argument, written straight into
    /// the command: a commit, once per batch, need not allocate it.
    pub(crate) fn epoch_arg(&self) -> Joined<'_> {
        Joined(&self.base, "epoch")
    }

    /// The tombstone of a deleted session, which every script obeys.
    pub(crate) fn gone(&self) -> String {
        format!("{}gone", self.base)
    }

    /// [`gone`](Self::gone) as a command argument, written in place.
    pub(crate) fn gone_arg(&self) -> Joined<'_> {
        Joined(&self.base, "gone")
    }

    /// Request stream `m`'s state hash (`m:<m>`), as a command argument
    /// written in place.
    pub(crate) fn meta_arg(&self, m: u64) -> Meta<'_> {
        Meta(&self.base, m)
    }

    /// Request stream `m`'s packed string (`p:<m>`, see `quick.lua`), as a
    /// command argument written in place.
    pub(crate) fn packed_arg(&self, m: u64) -> Packed<'_> {
        Packed(&self.base, m)
    }

    /// The session's `SessionState`, as JSON.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn state(&self) -> String {
        format!("{}state", self.base)
    }

    /// A stream's Redis stream.
    pub(crate) fn stream(&self, stream: StreamId) -> String {
        format!("{}x:{}", self.base, stream_field(stream))
    }
}

/// Two strings as one command argument, with no string of their own.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Joined<'a>(&'a str, &'a str);

impl redis::ToRedisArgs for Joined<'_> {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        out.write_arg_fmt(format_args!("{}{}", self.0, self.1));
    }
}

/// A request stream's state key as a command argument, with no string of
/// its own.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta<'a>(&'a str, u64);

impl redis::ToRedisArgs for Meta<'_> {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        out.write_arg_fmt(format_args!("{}m:{}", self.0, self.1));
    }
}

/// A request stream's packed string's key as a command argument.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Packed<'a>(&'a str, u64);

impl redis::ToRedisArgs for Packed<'_> {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        out.write_arg_fmt(format_args!("{}p:{}", self.0, self.1));
    }
}

/// [`stream_field`] as a command argument, written straight into the
/// command.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamField(pub(crate) StreamId);

impl redis::ToRedisArgs for StreamField {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        match self.0.request() {
            Some(m) => m.write_redis_args(out),
            None => out.write_arg(b"s"),
        }
    }
}

/// How the scripts name a stream: `s` for the standalone stream, else the
/// request stream's number.
pub(crate) fn stream_field(stream: StreamId) -> String {
    match stream.request() {
        Some(m) => m.to_string(),
        None => "s".to_owned(),
    }
}

/// The first index a stream's events get: the standalone stream's ids start
/// at 1, so that the priming id `0` precedes them all.
pub(crate) fn first_index(stream: StreamId) -> u64 {
    match stream.request() {
        Some(_) => 0,
        None => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_shares_the_session_hash_tag() {
        let keys = SessionKeys::new("rr", "abc");
        for key in [
            keys.epoch(),
            keys.state(),
            keys.stream(StreamId::Standalone),
            keys.stream(StreamId::Request(7)),
        ] {
            assert!(key.starts_with("rr:{abc}:"), "{key}");
        }
        assert_eq!(keys.stream(StreamId::Request(7)), "rr:{abc}:x:7");
        assert_eq!(keys.stream(StreamId::Standalone), "rr:{abc}:x:s");
    }

    #[test]
    fn arguments_written_in_place_are_the_strings_they_stand_for() {
        let keys = SessionKeys::new("rr", "a}b{c");
        let mut in_place = redis::Cmd::new();
        let mut strings = redis::Cmd::new();
        in_place.arg(keys.epoch_arg()).arg(keys.gone_arg());
        strings.arg(keys.epoch()).arg(keys.gone());
        for m in [0, 7, u64::MAX] {
            in_place.arg(keys.meta_arg(m)).arg(keys.packed_arg(m));
            strings
                .arg(format!("{}m:{m}", keys.base()))
                .arg(format!("{}p:{m}", keys.base()));
        }
        for stream in [
            StreamId::Standalone,
            StreamId::Request(0),
            StreamId::Request(u64::MAX),
        ] {
            in_place.arg(StreamField(stream));
            strings.arg(stream_field(stream));
        }
        assert_eq!(in_place.get_packed_command(), strings.get_packed_command());
    }

    #[test]
    fn braces_in_a_session_id_cannot_move_the_tag() {
        let keys = SessionKeys::new("rr", "a}b{c");
        assert_eq!(keys.epoch(), "rr:{a_b_c}:epoch");
    }
}
