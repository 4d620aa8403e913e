//! Group commit: the commits of every session of an instance go to Redis
//! together, one pipeline per round trip.
//!
//! Each session's mirror has at most one commit outstanding, so a
//! session's batches stay in order whatever the grouping. While one group
//! is on the wire, the commits that arrive meanwhile wait and leave as the
//! next group: under load a round trip carries many sessions' batches, and
//! Redis wakes once for them, where a command per session would wake it
//! (and this instance) once per session. Alone, a commit leaves at once.
//!
//! | A group's pipeline | Each commit in it gets |
//! |---|---|
//! | answered | its own script's reply (a refusal, a fence, a loss: per session) |
//! | answered `NOSCRIPT` for some (Redis restarted, or flushed its scripts) | the script loaded again, and only those commits sent again (the others ran) |
//! | failed (unreachable, timed out) | the error: its mirror retries as it does for any failed commit |
//!
//! Only on one Redis: on a cluster each session's slot may live on another
//! node, so commits go one by one, each to its node.

use redis::{Cmd, ErrorKind, RedisError, RedisResult, Script, ServerErrorKind, Value};
use tokio::sync::{mpsc, oneshot};

use crate::connection::Connection;

/// Commits one group carries at most.
const GROUP: usize = 512;
/// Bytes of arguments past which a group takes no more commits, so that a
/// few large batches do not share one response timeout with many others.
const GROUP_BYTES: usize = 1 << 20;

/// The instance's end of its committer task.
pub(crate) struct GroupCommit {
    jobs: mpsc::UnboundedSender<Job>,
    /// For commits made after the task ended (its runtime shut down): they
    /// go one by one, as on a cluster.
    conn: Connection,
    scripts: Vec<Script>,
}

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct Job {
    cmd: Cmd,
    reply: oneshot::Sender<RedisResult<Value>>,
}

impl GroupCommit {
    /// Starts the committer on `conn`; `scripts` are the ones its commands
    /// call, all loaded again when Redis forgot one. The task ends with the
    /// last handle.
    pub(crate) fn start(conn: Connection, scripts: Vec<Script>) -> Self {
        let (jobs, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(conn.clone(), scripts.clone(), rx));
        Self {
            jobs,
            conn,
            scripts,
        }
    }

    /// Sends `cmd` (an `EVALSHA` of one of the scripts) in the next group
    /// and returns its reply.
    pub(crate) async fn query(&self, cmd: Cmd) -> RedisResult<Value> {
        let (reply, answer) = oneshot::channel();
        match self.jobs.send(Job { cmd, reply }) {
            Ok(()) => answer.await.map_err(|_| stopped())?,
            Err(mpsc::error::SendError(job)) => {
                tracing::debug!("the group committer has ended; committing alone");
                query_alone(&mut self.conn.clone(), &self.scripts, &job.cmd).await
            }
        }
    }
}

/// `cmd` (an `EVALSHA` of one of `scripts`) on its own, with `scripts`
/// loaded again and `cmd` sent once more if Redis forgot its script.
pub(crate) async fn query_alone(
    conn: &mut Connection,
    scripts: &[Script],
    cmd: &Cmd,
) -> RedisResult<Value> {
    let reply = cmd.query_async(conn).await;
    if no_script(&reply) {
        load(conn, scripts).await?;
        return cmd.query_async(conn).await;
    }
    reply
}

/// Loads every one of `scripts`: Redis forgets them all at once (a restart,
/// a flush), and a `SCRIPT LOAD` is rare enough not to tell which one a
/// command called.
async fn load(conn: &mut Connection, scripts: &[Script]) -> RedisResult<()> {
    for script in scripts {
        script.load_async(conn).await?;
    }
    Ok(())
}

fn stopped() -> RedisError {
    RedisError::from((ErrorKind::Io, "the group committer stopped"))
}

fn no_script(reply: &RedisResult<Value>) -> bool {
    matches!(reply, Err(error) if error.kind() == ErrorKind::Server(ServerErrorKind::NoScript))
}

async fn run(mut conn: Connection, scripts: Vec<Script>, mut rx: mpsc::UnboundedReceiver<Job>) {
    let mut jobs: Vec<Job> = Vec::with_capacity(GROUP);
    let mut carry: Option<Job> = None;
    loop {
        let first = match carry.take() {
            Some(job) => job,
            None => match rx.recv().await {
                Some(job) => job,
                None => return,
            },
        };
        let mut bytes = weight(&first);
        jobs.push(first);
        while jobs.len() < GROUP && bytes < GROUP_BYTES {
            match rx.try_recv() {
                Ok(job) if bytes + weight(&job) > GROUP_BYTES => {
                    carry = Some(job);
                    break;
                }
                Ok(job) => {
                    bytes += weight(&job);
                    jobs.push(job);
                }
                Err(_) => break,
            }
        }
        match send(&mut conn, &scripts, &mut jobs).await {
            Ok(each) => {
                for (job, reply) in jobs.drain(..).zip(each) {
                    let _ = job.reply.send(reply);
                }
            }
            Err(error) => {
                for job in jobs.drain(..) {
                    let _ = job.reply.send(Err(error.clone()));
                }
            }
        }
    }
}

/// The bytes a job puts on the wire, about.
fn weight(job: &Job) -> usize {
    job.cmd
        .args_iter()
        .map(|arg| match arg {
            redis::Arg::Simple(bytes) => bytes.len(),
            _ => 0,
        })
        .sum()
}

/// One reply per job, or the error that failed them all. The jobs'
/// commands move into the pipeline (a group's bytes are not copied); if
/// Redis forgot the scripts (a restart, a flush), they are loaded again and
/// the commits that did not run, only those, are sent again.
async fn send(
    conn: &mut Connection,
    scripts: &[Script],
    jobs: &mut [Job],
) -> RedisResult<Vec<RedisResult<Value>>> {
    if let [job] = jobs {
        // Alone: a plain command, with nothing to group.
        let reply = query_alone(conn, scripts, &job.cmd).await;
        return Ok(vec![reply]);
    }
    let mut pipe = redis::Pipeline::with_capacity(jobs.len());
    pipe.ignore_errors();
    for job in jobs.iter_mut() {
        pipe.add_command(std::mem::take(&mut job.cmd));
    }
    let mut each = query_pipe(conn, &pipe).await?;
    if each.iter().any(no_script) {
        load(conn, scripts).await?;
        let again: Vec<usize> = (0..each.len()).filter(|&i| no_script(&each[i])).collect();
        let mut retry = redis::Pipeline::with_capacity(again.len());
        retry.ignore_errors();
        for cmd in pipe
            .cmd_iter()
            .enumerate()
            .filter(|(i, _)| again.contains(i))
            .map(|(_, cmd)| cmd)
        {
            retry.add_command(cmd.clone());
        }
        for (i, reply) in again.into_iter().zip(query_pipe(conn, &retry).await?) {
            each[i] = reply;
        }
    }
    Ok(each)
}

/// A pipeline's replies, one per command.
async fn query_pipe(
    conn: &mut Connection,
    pipe: &redis::Pipeline,
) -> RedisResult<Vec<RedisResult<Value>>> {
    let commands = pipe.cmd_iter().count();
    let values: Vec<Value> = pipe.query_async(conn).await?;
    if values.len() != commands {
        return Err(RedisError::from((
            ErrorKind::Client,
            "a pipeline answered another number of replies",
            format!("{} for {commands} commands", values.len()),
        )));
    }
    Ok(values.into_iter().map(Value::extract_error).collect())
}

#[cfg(test)]
mod tests {
    use futures::future::join_all;
    use redis::{Cmd, Script, Value};
    use rmcp_resume_testkit::redis::RedisServer;

    use super::GroupCommit;
    use crate::connection::Backend;

    /// Groups that mix commits whose script Redis forgot with commands that
    /// ran: each job gets its own reply, and only the forgotten ones are
    /// sent again (a plain `INCR` sent twice would count 2).
    #[tokio::test]
    async fn a_partial_noscript_retry_answers_each_job_once() {
        let server = RedisServer::start();
        let backend = Backend::single(&server.url()).expect("client");
        let conn = backend.shared().await.expect("connection");
        let script = Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
        // The jobs call the group's second script: a flush loads them all.
        let group = GroupCommit::start(conn.clone(), vec![Script::new("return 0"), script.clone()]);
        let mut admin = conn.clone();
        // Round 0 and 1: half the jobs run the script; round 2: one does.
        for (round, scripted) in [(0_i64, 2_usize), (1, 2), (2, 12)] {
            let _: Value = redis::cmd("SCRIPT")
                .arg("FLUSH")
                .query_async(&mut admin)
                .await
                .expect("flush");
            let jobs = (0..12_usize).map(|i| {
                let cmd = if i % scripted == 0 {
                    let mut cmd = Cmd::new();
                    cmd.arg("EVALSHA")
                        .arg(script.get_hash())
                        .arg(1)
                        .arg(format!("e{i}"))
                        .arg(i + 1);
                    cmd
                } else {
                    let mut cmd = redis::cmd("INCR");
                    cmd.arg(format!("p{i}"));
                    cmd
                };
                let group = &group;
                async move { (i, group.query(cmd).await) }
            });
            for (i, reply) in join_all(jobs).await {
                let reply: i64 = redis::from_redis_value(reply.expect("reply")).expect("integer");
                // Each key's earlier rounds: even `e{i}` and odd `p{i}` ran in
                // rounds 0 and 1; in round 2 only `e0` runs the script, and
                // the even `p{i}` are new.
                let (earlier, step) = match (round, i % scripted == 0, i % 2) {
                    (2, false, 0) => (0, 1),
                    (_, true, _) => (round, i as i64 + 1),
                    _ => (round, 1),
                };
                assert_eq!(
                    reply,
                    (earlier + 1) * step,
                    "round {round}, job {i}: run once"
                );
            }
        }
    }
}
