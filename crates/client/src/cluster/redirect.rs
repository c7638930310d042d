//! Error replies the cluster client acts on instead of returning them: `MOVED`, `ASK`,
//! `TRYAGAIN`, `CLUSTERDOWN`, `LOADING`, `MASTERDOWN`.

use redline_resp::Frame;

/// What an error reply asks the client to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Redirect {
    /// `MOVED <slot> <host>:<port>`: the slot has a new owner for good.
    Moved { slot: u16, host: String, port: u16 },
    /// `ASK <slot> <host>:<port>`: this one command goes there, after `ASKING`.
    Ask { host: String, port: u16 },
    /// `TRYAGAIN`: a multi-key command met a slot in migration; retry shortly.
    TryAgain,
    /// `CLUSTERDOWN`: the cluster cannot serve the slot right now (failover underway).
    ClusterDown,
    /// `LOADING` or `MASTERDOWN`: the node is not ready; retry shortly.
    Loading,
}

/// Classifies a reply; `None` for anything the caller should get as it is.
pub(crate) fn classify(frame: &Frame) -> Option<Redirect> {
    let line = match frame {
        Frame::Error(line) | Frame::BulkError(line) => line,
        _ => return None,
    };
    let text = std::str::from_utf8(line).ok()?;
    let mut words = text.split(' ');
    match words.next()? {
        "MOVED" => {
            let slot = words.next()?.parse().ok()?;
            let (host, port) = target(words.next()?)?;
            Some(Redirect::Moved { slot, host, port })
        }
        "ASK" => {
            words.next()?;
            let (host, port) = target(words.next()?)?;
            Some(Redirect::Ask { host, port })
        }
        "TRYAGAIN" => Some(Redirect::TryAgain),
        "CLUSTERDOWN" => Some(Redirect::ClusterDown),
        "LOADING" | "MASTERDOWN" => Some(Redirect::Loading),
        _ => None,
    }
}

/// `host:port`, the host possibly empty (the node that replied) or IPv6 (`::1:7000`).
fn target(s: &str) -> Option<(String, u16)> {
    let (host, port) = s.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Some((host.to_owned(), port.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn err(s: &'static str) -> Frame {
        Frame::Error(Bytes::from_static(s.as_bytes()))
    }

    #[test]
    fn parses_redirects() {
        assert_eq!(
            classify(&err("MOVED 3999 127.0.0.1:6381")),
            Some(Redirect::Moved {
                slot: 3999,
                host: "127.0.0.1".into(),
                port: 6381
            })
        );
        assert_eq!(
            classify(&err("ASK 1 ::1:7000")),
            Some(Redirect::Ask {
                host: "::1".into(),
                port: 7000
            })
        );
        assert_eq!(
            classify(&err("MOVED 1 :7000")),
            Some(Redirect::Moved {
                slot: 1,
                host: String::new(),
                port: 7000
            })
        );
        assert_eq!(
            classify(&err("CLUSTERDOWN The cluster is down")),
            Some(Redirect::ClusterDown)
        );
        assert_eq!(classify(&err("ERR nope")), None);
        assert_eq!(classify(&Frame::Integer(1)), None);
    }
}
