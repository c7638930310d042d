//! Logging in redis-server's format: `pid:M 22 Nov 2026 07:53:50.798 * message` (`S`
//! instead of `M` while the server is a replica), with Redis's level marks (`.` debug, `-` verbose, `*` notice, `#` warning), to standard
//! output or the configured `logfile`, which is opened anew for each line as Redis
//! opens it: a log rotated away by renaming (logrotate without `copytruncate`, as
//! Debian's rule for Redis is) is followed by a new file at the configured path.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::config::{Config, LogLevel};

/// Formats events like redis-server's log lines; with `message_only`, without the pid,
/// role, time and level mark (what Redis sends to the system log).
pub struct RedisFormat {
    /// The message alone, without the prefix.
    pub message_only: bool,
}

/// The role mark of the process's log lines: `M`, or `S` on a replica (one server per
/// process; servers embedded side by side in tests share it).
static ROLE: AtomicU8 = AtomicU8::new(b'M');

/// Marks the lines logged from now on as a replica's (`S`) or a master's (`M`), as
/// Redis marks them.
pub fn set_replica(replica: bool) {
    ROLE.store(if replica { b'S' } else { b'M' }, Ordering::Relaxed);
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Civil date from days since the epoch (Howard Hinnant's algorithm).
fn civil(days: i64) -> (i64, usize, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, (month - 1) as usize, day)
}

impl<S, N> FormatEvent<S, N> for RedisFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        if !self.message_only {
            write_prefix(&mut writer, event)?;
        }
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// `pid:M 22 Nov 2026 07:53:50.798 * ` before a log file's line.
fn write_prefix(writer: &mut Writer<'_>, event: &Event<'_>) -> fmt::Result {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs() as i64;
    let (year, month, day) = civil(secs.div_euclid(86_400));
    let in_day = secs.rem_euclid(86_400);
    let mark = match *event.metadata().level() {
        Level::TRACE => '.',
        Level::DEBUG => '-',
        Level::INFO => '*',
        _ => '#',
    };
    write!(
        writer,
        "{}:{} {:02} {} {} {:02}:{:02}:{:02}.{:03} {} ",
        std::process::id(),
        char::from(ROLE.load(Ordering::Relaxed)),
        day,
        MONTHS[month],
        year,
        in_day / 3600,
        in_day % 3600 / 60,
        in_day % 60,
        now.subsec_millis(),
        mark
    )
}

/// The tracing level that shows what `loglevel` shows.
pub fn level_of(level: LogLevel) -> Level {
    match level {
        LogLevel::Debug => Level::TRACE,
        LogLevel::Verbose => Level::DEBUG,
        LogLevel::Notice => Level::INFO,
        LogLevel::Warning => Level::WARN,
    }
}

/// The `logfile`, opened in append mode for each line (one write each: the formatter
/// hands a whole line over at once).
struct LogFile {
    path: PathBuf,
}

impl LogFile {
    fn open(&self) -> io::Result<File> {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
    }
}

/// One line's handle on the log file; none when it could not be opened (the line is
/// lost, as Redis's is).
struct LogLine(Option<File>);

impl io::Write for LogLine {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.0 {
            Some(file) => file.write(buf),
            None => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogFile {
    type Writer = LogLine;

    fn make_writer(&'a self) -> LogLine {
        LogLine(self.open().ok())
    }
}

/// Installs the global logger for the binary. Embedders keep their own subscriber.
pub fn init(config: &Config) -> std::io::Result<()> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let level = tracing_subscriber::filter::LevelFilter::from_level(level_of(config.loglevel));
    let layer = tracing_subscriber::fmt::layer()
        .event_format(RedisFormat {
            message_only: false,
        })
        // A line that cannot be written (a full disk) is lost, as Redis's is; reporting
        // that on standard error would panic the thread logging when that fails too.
        .log_internal_errors(false);
    // With `syslog-enabled yes`, every line goes to the system log too, without the
    // prefix the log file's lines have (the system log adds its own).
    let system_log = crate::syslog::open(config).map(|writer| {
        tracing_subscriber::fmt::layer()
            .event_format(RedisFormat { message_only: true })
            .log_internal_errors(false)
            .with_writer(writer)
    });
    let registry = tracing_subscriber::registry().with(level).with(system_log);
    let result = if config.logfile.is_empty() {
        registry.with(layer.with_writer(std::io::stdout)).try_init()
    } else {
        let file = LogFile {
            path: PathBuf::from(&config.logfile),
        };
        // Opened once here so that a log file that cannot be written stops the start.
        file.open()?;
        registry.with(layer.with_writer(file)).try_init()
    };
    // Already installed (tests): keep the existing one.
    let _ = result;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::civil;

    #[test]
    fn civil_dates() {
        assert_eq!(civil(0), (1970, 0, 1));
        assert_eq!(civil(20_414), (2025, 10, 22));
    }
}
