//! What the benchmark talks to: the redline client for one server (and, with
//! `--cluster`, the cluster client). One command or one pipeline at a time per worker.

use redline::{Client, ClusterClient, Cmd, Error, Frame};

/// A connected benchmark target. Cheap to clone (the clients are handles).
#[derive(Clone, Debug)]
pub(crate) enum Target {
    /// One server through [`Client`]'s multiplexed pool.
    Single(Client),
    /// A cluster through [`ClusterClient`] (`--cluster`).
    Cluster(ClusterClient),
}

impl Target {
    /// One command; an error reply is `Err`.
    pub(crate) async fn one(&self, cmd: Cmd) -> Result<Frame, Error> {
        match self {
            Target::Single(client) => client.query::<Frame>(cmd).await,
            Target::Cluster(cluster) => cluster.query::<Frame>(cmd).await,
        }
    }

    /// A pipeline of commands sent together; error replies stay in the returned frames.
    pub(crate) async fn many(&self, cmds: Vec<Cmd>) -> Result<Vec<Frame>, Error> {
        match self {
            Target::Single(client) => {
                let mut pipeline = client.pipeline();
                for cmd in cmds {
                    pipeline.add(cmd);
                }
                pipeline.query_frames().await
            }
            Target::Cluster(cluster) => {
                let mut pipeline = cluster.pipeline();
                for cmd in cmds {
                    pipeline.add(cmd);
                }
                pipeline.query_frames().await
            }
        }
    }
}
