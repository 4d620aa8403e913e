//! A quick call's commit: a request stream born and answered in one batch,
//! the commit nearly every tool call makes.
//!
//! `commit.lua` recognised such a batch itself, by a loop over its
//! arguments, and that loop, the configuration sent with every commit and
//! the keys built in Lua were most of Redis's work per call (issue 45's
//! profile). The instance knows the batch's shape before it sends it, so
//! it checks the shape here and sends `quick.lua` the keys, the epoch, the
//! expiry, and the stream already packed as one string (its layout is in
//! `quick.lua`), which the script stores with one `SET`. A read finds the
//! same stream whichever script wrote it (a test compares them).
//!
//! | The batch | Sent as |
//! |---|---|
//! | one request stream: 1 to 16 appends at its first indexes (or its head), one `Open` among them, a `Finish` last; with more than one event, within `keep_events`, `max_events` and `max_stream_bytes` | `quick.lua` |
//! | the same, but Redis knows the stream (a retried batch) | `quick.lua` refuses it, `commit.lua` takes it |
//! | anything else | `commit.lua` |

use std::io::Write as _;

use redis::Cmd;
use rmcp_resume_core::resumption::StreamId;

use crate::config::RedisLogConfig;
use crate::keys::SessionKeys;
use crate::log::{Committed, Write};

/// Events a packed stream holds at most (`packed_events` in `commit.lua`).
pub(crate) const PACKED_EVENTS: usize = 16;

/// The bytes `commit.lua` counts for an event besides its data.
const EVENT_OVERHEAD: usize = 32;

/// A batch that is one quick call, with what its command needs.
#[derive(Debug)]
pub(crate) struct QuickCall<'a> {
    stream: u64,
    events: Vec<&'a str>,
    bytes: usize,
}

impl<'a> QuickCall<'a> {
    /// The quick call `writes` make, if they make one under `config`: the
    /// rule of `commit.lua`'s packing, for a stream Redis does not know.
    pub(crate) fn of(writes: &[Write<'a>], config: &RedisLogConfig) -> Option<Self> {
        let (Write::Finish { stream }, body) = writes.split_last()? else {
            return None;
        };
        // At most 16 appends, one `Open` and the `Finish`: a longer batch (a
        // seeding's) is not looked through.
        if body.len() > PACKED_EVENTS + 1 {
            return None;
        }
        let stream = *stream;
        let mut events = Vec::with_capacity(body.len());
        let mut opened = 0_usize;
        let mut bytes = 0_usize;
        for write in body {
            match write {
                Write::Append {
                    stream: StreamId::Request(m),
                    index,
                    data,
                } if *m == stream => {
                    // Indexes count from the request stream's first, 0; `None`
                    // is the head, which for a new stream is the same.
                    let at = u64::try_from(events.len()).ok()?;
                    if index.is_some_and(|index| index != at) {
                        return None;
                    }
                    let data = data.unwrap_or("");
                    bytes += data.len() + EVENT_OVERHEAD;
                    events.push(data);
                }
                Write::Open { stream: m, .. } if *m == stream => opened += 1,
                _ => return None,
            }
        }
        let count = events.len();
        let fits = count == 1
            || (count <= config.window.keep_events
                && count <= config.window.max_events
                && bytes <= config.max_stream_bytes);
        (opened == 1 && (1..=PACKED_EVENTS).contains(&count) && fits).then_some(Self {
            stream,
            events,
            bytes,
        })
    }

    /// The `EVALSHA` of `quick.lua` (by `hash`) that commits it under
    /// `epoch`, its stream kept `answered_ttl_ms` after.
    pub(crate) fn command(
        &self,
        hash: &str,
        keys: &SessionKeys,
        epoch: u64,
        answered_ttl_ms: u64,
    ) -> Cmd {
        let packed = self.packed(epoch);
        let mut cmd = Cmd::with_capacity(10, 200 + packed.len());
        cmd.arg("EVALSHA")
            .arg(hash)
            .arg(4)
            .arg(keys.epoch_arg())
            .arg(keys.gone_arg())
            .arg(keys.meta_arg(self.stream))
            .arg(keys.packed_arg(self.stream))
            .arg(epoch)
            .arg(answered_ttl_ms)
            .arg(packed);
        cmd
    }

    /// The stream as `quick.lua` stores it: `<epoch>\n<count>\n<bytes>\n`,
    /// then each event's data preceded by its length and `\n`.
    pub(crate) fn packed(&self, epoch: u64) -> Vec<u8> {
        let data: usize = self.events.iter().map(|data| data.len() + 8).sum();
        let mut out = Vec::with_capacity(48 + data);
        // Writing into a Vec cannot fail.
        let _ = write!(out, "{epoch}\n{}\n{}\n", self.events.len(), self.bytes);
        for data in &self.events {
            let _ = writeln!(out, "{}", data.len());
            out.extend_from_slice(data.as_bytes());
        }
        out
    }

    /// The request stream it commits.
    pub(crate) fn stream(&self) -> u64 {
        self.stream
    }

    /// What the commit did, once `quick.lua` answered `{0}`.
    pub(crate) fn committed(&self) -> Committed {
        Committed {
            last: u64::try_from(self.events.len())
                .ok()
                .and_then(|n| n.checked_sub(1)),
            holes: 0,
            dropped: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use rmcp_resume_core::resumption::StreamId;

    use super::{PACKED_EVENTS, QuickCall};
    use crate::config::RedisLogConfig;
    use crate::log::Write;

    fn append(m: u64, index: Option<u64>, data: &str) -> Write<'_> {
        Write::Append {
            stream: StreamId::Request(m),
            index,
            data: Some(data),
        }
    }

    fn open(m: u64) -> Write<'static> {
        Write::Open {
            stream: m,
            request_id: "1",
        }
    }

    fn finish(m: u64) -> Write<'static> {
        Write::Finish { stream: m }
    }

    #[test]
    fn a_call_primed_opened_and_answered_is_quick() {
        let config = RedisLogConfig::default();
        let writes = [
            append(4, Some(0), ""),
            open(4),
            append(4, Some(1), "{}"),
            finish(4),
        ];
        let quick = QuickCall::of(&writes, &config).expect("quick");
        assert_eq!(quick.events, ["", "{}"]);
        assert_eq!(quick.bytes, 32 + 34);
        assert_eq!(quick.committed().last, Some(1));
        assert_eq!(quick.packed(7), b"7\n2\n66\n0\n2\n{}");
        // The head (`None`) of a new stream is its first indexes.
        let writes = [
            open(4),
            append(4, None, "a"),
            append(4, None, "b"),
            finish(4),
        ];
        assert!(QuickCall::of(&writes, &config).is_some());
    }

    #[test]
    fn anything_else_goes_to_the_general_script() {
        let config = RedisLogConfig::default();
        let many: Vec<Write<'_>> = std::iter::once(open(1))
            .chain((0..=PACKED_EVENTS as u64).map(|i| append(1, Some(i), "x")))
            .chain([finish(1)])
            .collect();
        let cases: [(&str, Vec<Write<'_>>); 10] = [
            ("no finish", vec![open(1), append(1, Some(0), "")]),
            (
                "finish not last",
                vec![open(1), finish(1), append(1, Some(0), "")],
            ),
            ("no open", vec![append(1, Some(0), ""), finish(1)]),
            (
                "two opens",
                vec![open(1), open(1), append(1, Some(0), ""), finish(1)],
            ),
            ("no event", vec![open(1), finish(1)]),
            (
                "an index past the head",
                vec![open(1), append(1, Some(1), ""), finish(1)],
            ),
            (
                "another stream's open",
                vec![open(2), append(1, Some(0), ""), finish(1)],
            ),
            (
                "another stream",
                vec![open(1), append(2, Some(0), ""), finish(1)],
            ),
            (
                "the standalone stream",
                vec![
                    open(1),
                    Write::Append {
                        stream: StreamId::Standalone,
                        index: Some(0),
                        data: None,
                    },
                    finish(1),
                ],
            ),
            ("too many events to pack", many),
        ];
        for (case, writes) in cases {
            assert!(QuickCall::of(&writes, &config).is_none(), "{case}");
        }
    }

    #[test]
    fn a_window_the_events_overflow_is_the_general_scripts_to_trim() {
        let writes = [
            open(1),
            append(1, Some(0), "abcd"),
            append(1, Some(1), "efgh"),
            finish(1),
        ];
        let mut config = RedisLogConfig::default();
        assert!(QuickCall::of(&writes, &config).is_some());
        config.window.keep_events = 1;
        assert!(QuickCall::of(&writes, &config).is_none(), "keep_events");
        config = RedisLogConfig::default();
        config.window.max_events = 1;
        assert!(QuickCall::of(&writes, &config).is_none(), "max_events");
        config = RedisLogConfig::default();
        config.max_stream_bytes = 2 * 36 - 1;
        assert!(
            QuickCall::of(&writes, &config).is_none(),
            "max_stream_bytes"
        );
        config.max_stream_bytes = 2 * 36;
        assert!(QuickCall::of(&writes, &config).is_some(), "at the cap");
        // One event is kept whatever the window: a trim keeps the newest.
        let one = [open(1), append(1, Some(0), "abcd"), finish(1)];
        assert!(QuickCall::of(&one, &config).is_some());
        config.window.max_events = 0;
        config.max_stream_bytes = 0;
        assert!(QuickCall::of(&one, &config).is_some());
    }
}
