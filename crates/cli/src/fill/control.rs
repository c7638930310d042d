//! The fill's control connection (not the fill connections): flushing, the masters to
//! fill with their slots (CLUSTER SLOTS), and the final DBSIZE of each.

use redline::{Client, ClusterClient, Cmd, Config, Frame};

use super::plan::Master;
use super::FillError;

/// The standalone or cluster control connection (flush, topology, DBSIZE).
pub(crate) enum Control {
    /// One server, and the settings it was reached with.
    Single(Client, Box<Config>),
    /// A cluster.
    Cluster(ClusterClient),
}

/// `--flush`: FLUSHDB on the server, FLUSHALL on every master of a cluster.
pub(crate) async fn flush(control: &Control) -> Result<(), FillError> {
    let what = "FLUSH";
    match control {
        Control::Single(client, _) => client
            .query::<()>(Cmd::new("FLUSHDB"))
            .await
            .map_err(|source| FillError::Command { what, source }),
        Control::Cluster(cluster) => {
            for (_, reply) in cluster
                .on_masters(Cmd::new("FLUSHALL"))
                .await
                .map_err(|source| FillError::Command { what, source })?
            {
                if let Frame::Error(e) = reply {
                    return Err(FillError::Command {
                        what,
                        source: redline::Error::from_server_reply(&e),
                    });
                }
            }
            Ok(())
        }
    }
}

/// The masters to fill: the one server, or every master with its slots from CLUSTER SLOTS.
pub(crate) async fn masters(control: &Control) -> Result<Vec<Master>, FillError> {
    let cluster = match control {
        Control::Single(_, cfg) => {
            return Ok(vec![Master {
                host: cfg.host.clone(),
                port: cfg.port,
                slots: Vec::new(),
            }])
        }
        Control::Cluster(cluster) => cluster,
    };
    let what = "CLUSTER SLOTS";
    let reply: Frame = cluster
        .on_random(Cmd::new("CLUSTER").arg("SLOTS"))
        .await
        .map_err(|source| FillError::Command { what, source })?;
    let mut masters: Vec<Master> = Vec::new();
    let Frame::Array(ranges) = reply else {
        return Err(FillError::Invalid("CLUSTER SLOTS: unexpected reply".into()));
    };
    for range in ranges {
        let Frame::Array(fields) = range else {
            continue;
        };
        let (Some(Frame::Integer(first)), Some(Frame::Integer(last)), Some(Frame::Array(node))) =
            (fields.first(), fields.get(1), fields.get(2))
        else {
            continue;
        };
        let host = match node.first() {
            Some(Frame::Bulk(h)) => String::from_utf8_lossy(h).into_owned(),
            _ => continue,
        };
        let Some(Frame::Integer(port)) = node.get(1) else {
            continue;
        };
        let Ok(port) = u16::try_from(*port) else {
            continue;
        };
        let slots = (*first..=*last).filter_map(|s| u16::try_from(s).ok());
        match masters
            .iter_mut()
            .find(|m| m.host == host && m.port == port)
        {
            Some(m) => m.slots.extend(slots),
            None => masters.push(Master {
                host,
                port,
                slots: slots.collect(),
            }),
        }
    }
    if masters.is_empty() {
        return Err(FillError::Invalid("the cluster serves no slots".into()));
    }
    for m in &mut masters {
        m.slots.sort_unstable();
    }
    masters.sort_by_key(|m| m.slots.first().copied());
    Ok(masters)
}

/// DBSIZE of every master, in the order of `masters`.
pub(crate) async fn dbsizes(control: &Control, masters: &[Master]) -> Result<Vec<u64>, FillError> {
    let what = "DBSIZE";
    let err = |source| FillError::Command { what, source };
    match control {
        Control::Single(client, _) => Ok(vec![client
            .query::<u64>(Cmd::new("DBSIZE"))
            .await
            .map_err(err)?]),
        Control::Cluster(cluster) => {
            let mut out = Vec::with_capacity(masters.len());
            for m in masters {
                let addr = format!("{}:{}", m.host, m.port);
                out.push(
                    cluster
                        .on_node::<u64>(&addr, Cmd::new("DBSIZE"))
                        .await
                        .map_err(err)?,
                );
            }
            Ok(out)
        }
    }
}
