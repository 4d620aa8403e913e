//! Persist, then send: a reader's events wait here until the shared log
//! has committed them.

use std::sync::Arc;

use tokio::sync::watch;

/// One stream's commit mark: every event below it is in the shared log.
///
/// The owner's mirror raises it after each commit; readers wait on it. When
/// the mirror fails for good (fenced, or the backend is gone), it is closed
/// and waiting readers end instead of sending what was never committed.
#[derive(Debug, Clone)]
pub struct Gate {
    mark: Arc<watch::Sender<Mark>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    Below(u64),
    Closed,
}

impl Gate {
    /// A gate that lets nothing below `start` wait: those events were
    /// committed earlier (or never existed).
    pub fn new(start: u64) -> Self {
        let (mark, _) = watch::channel(Mark::Below(start));
        Self {
            mark: Arc::new(mark),
        }
    }

    /// Events below `mark` are committed.
    pub fn raise(&self, mark: u64) {
        self.mark.send_if_modified(|current| match current {
            Mark::Below(below) if *below < mark => {
                *below = mark;
                true
            }
            _ => false,
        });
    }

    /// Nothing more will be committed; waiting readers end.
    pub fn close(&self) {
        self.mark.send_replace(Mark::Closed);
    }

    /// Waits until event `index` is committed: `false` if it never will be.
    pub async fn committed(&self, index: u64) -> bool {
        if crate::sabotage::on(crate::sabotage::Break::OpenGates) {
            return true;
        }
        let mut watcher = self.mark.subscribe();
        let result = watcher
            .wait_for(|mark| match mark {
                Mark::Below(below) => *below > index,
                Mark::Closed => true,
            })
            .await;
        matches!(result.as_deref(), Ok(Mark::Below(_)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use futures::FutureExt;

    #[tokio::test]
    async fn a_reader_waits_for_the_commit_and_ends_when_the_gate_closes() {
        let gate = Gate::new(0);
        let mut waiting = Box::pin(gate.committed(2));
        assert!(
            (&mut waiting).now_or_never().is_none(),
            "nothing committed yet"
        );
        gate.raise(2);
        assert!(
            (&mut waiting).now_or_never().is_none(),
            "events 0 and 1 only"
        );
        gate.raise(3);
        assert_eq!(waiting.now_or_never(), Some(true));
        gate.raise(1);
        assert_eq!(
            gate.committed(2).now_or_never(),
            Some(true),
            "a mark never falls"
        );
        let mut never = Box::pin(gate.committed(9));
        assert!((&mut never).now_or_never().is_none());
        gate.close();
        assert_eq!(never.now_or_never(), Some(false));
        assert_eq!(gate.committed(0).now_or_never(), Some(false));
    }
}
