//! Which nodes a cluster has: `CLUSTER NODES` asked over a raw upstream connection, reduced
//! to the addresses clients would dial. Pinned mode opens one listener per address.
//!
//! `CLUSTER NODES` (not `SLOTS` or `SHARDS`) because it lists every node, including
//! masters without slots yet and their replicas, so a node that joins is seen before it
//! serves anything.

use std::time::Duration;

use bytes::BytesMut;
use redline::RawConnector;
use redline_resp::Frame;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::error::TunnelError;
use super::rewrite::NodeAddr;

/// Limit for one topology query, reply included.
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// Asks the node behind `connector` (which is `here`) for every node's address.
pub(crate) async fn discover(
    connector: &RawConnector,
    here: &NodeAddr,
) -> Result<Vec<NodeAddr>, TunnelError> {
    let query = async {
        let mut conn = connector.connect().await?;
        conn.write_all(b"*2\r\n$7\r\nCLUSTER\r\n$5\r\nNODES\r\n")
            .await?;
        conn.flush().await?;
        let mut buf = BytesMut::with_capacity(16 * 1024);
        loop {
            if let Some(frame) =
                redline_resp::parse(&mut buf).map_err(|e| TunnelError::Topology(e.to_string()))?
            {
                return Ok::<Frame, TunnelError>(frame);
            }
            if conn.read_buf(&mut buf).await? == 0 {
                return Err(TunnelError::Topology(format!(
                    "{here} closed the connection"
                )));
            }
        }
    };
    let frame = tokio::time::timeout(QUERY_TIMEOUT, query)
        .await
        .map_err(|_| TunnelError::Topology(format!("{here} did not answer CLUSTER NODES")))??;
    let text = match &frame {
        Frame::Bulk(text) | Frame::Verbatim { text, .. } => String::from_utf8_lossy(text),
        Frame::Error(e) | Frame::BulkError(e) => {
            return Err(TunnelError::Topology(format!(
                "{here}: {}",
                String::from_utf8_lossy(e)
            )))
        }
        other => {
            return Err(TunnelError::Topology(format!(
                "{here}: unexpected CLUSTER NODES reply {other:?}"
            )))
        }
    };
    Ok(parse_nodes(&text, here))
}

/// The dialable addresses in `CLUSTER NODES` text, sorted, without duplicates. Nodes
/// still in handshake or without an address are skipped; an empty host (a node that
/// does not know its own IP yet) is the host we asked.
pub(crate) fn parse_nodes(text: &str, here: &NodeAddr) -> Vec<NodeAddr> {
    let mut nodes: Vec<NodeAddr> = text
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let _id = fields.next()?;
            let addr = fields.next()?;
            let flags = fields.next()?;
            if flags.contains("noaddr") || flags.contains("handshake") {
                return None;
            }
            let addr = addr.split([',', '@']).next()?;
            let (host, port) = addr.rsplit_once(':')?;
            let port: u16 = port.parse().ok().filter(|&p| p != 0)?;
            let host = if host.is_empty() { &here.host } else { host };
            Some(NodeAddr::new(host, port))
        })
        .collect();
    nodes.sort();
    nodes.dedup();
    nodes
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn parses_cluster_nodes() {
        let text = "b 127.0.0.1:7001@17001 master - 0 0 2 connected 5461-10922\n\
                    a :7000@17000 myself,master - 0 0 1 connected 0-5460\n\
                    c 10.0.0.3:7002@17002,host.example slave b 0 0 2 connected\n\
                    d :0@0 master,noaddr - 0 0 0 disconnected\n\
                    e 10.0.0.9:7009@17009 handshake - 0 0 0 connected\n";
        let here = NodeAddr::new("127.0.0.1", 7000);
        assert_eq!(
            parse_nodes(text, &here),
            vec![
                NodeAddr::new("10.0.0.3", 7002),
                NodeAddr::new("127.0.0.1", 7000),
                NodeAddr::new("127.0.0.1", 7001),
            ]
        );
    }
}
