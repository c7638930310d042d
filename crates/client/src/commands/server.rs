//! Server basics: PING, ECHO, INFO, DBSIZE, FLUSHALL, CONFIG GET/SET, TIME.

use std::collections::HashMap;

use bytes::Bytes;

use super::commands;
use crate::cmd::{cmd, ToArg};

commands! {
    /// `PING`: `"PONG"`.
    fn ping() -> String { cmd!("PING") }

    /// `ECHO message`.
    fn echo(message: impl ToArg) -> Bytes { cmd!("ECHO").arg(message) }

    /// `INFO [section]`: the report text (`""` for all default sections).
    fn info(section: impl ToArg) -> String { cmd!("INFO").arg(section) }

    /// `DBSIZE`: keys in the selected database.
    fn dbsize() -> u64 { cmd!("DBSIZE") }

    /// `FLUSHALL`: removes every key of every database.
    fn flushall() -> () { cmd!("FLUSHALL") }

    /// `FLUSHDB`: removes every key of the selected database.
    fn flushdb() -> () { cmd!("FLUSHDB") }

    /// `CONFIG GET pattern`: matching parameters and values.
    fn config_get(pattern: impl ToArg) -> HashMap<String, String> { cmd!("CONFIG").arg("GET").arg(pattern) }

    /// `CONFIG SET parameter value`.
    fn config_set(parameter: impl ToArg, value: impl ToArg) -> () {
        cmd!("CONFIG").arg("SET").arg(parameter).arg(value)
    }

    /// `TIME`: Unix seconds and microseconds.
    fn time() -> (u64, u64) { cmd!("TIME") }
}
