//! The deterministic seed: the same 10,000 users on every machine and every run, so load
//! tests of different backends read the same rows.

use rusqlite::Connection;

/// The PRNG seed.
pub const SEED: u64 = 42;
/// How many users the seed writes.
pub const SEED_USERS: usize = 10_000;

const FIRST: &[&str] = &[
    "Ada",
    "Alan",
    "Barbara",
    "Brian",
    "Claude",
    "Dennis",
    "Donald",
    "Edsger",
    "Frances",
    "Grace",
    "Guido",
    "Hedy",
    "Ivan",
    "James",
    "John",
    "Ken",
    "Leslie",
    "Linus",
    "Margaret",
    "Niklaus",
    "Radia",
    "Rob",
    "Shafi",
    "Sophie",
    "Tim",
    "Tony",
    "Whitfield",
    "Yukihiro",
];
const LAST: &[&str] = &[
    "Lovelace",
    "Turing",
    "Liskov",
    "Kernighan",
    "Shannon",
    "Ritchie",
    "Knuth",
    "Dijkstra",
    "Allen",
    "Hopper",
    "Rossum",
    "Lamarr",
    "Sutherland",
    "Gosling",
    "McCarthy",
    "Thompson",
    "Lamport",
    "Torvalds",
    "Hamilton",
    "Wirth",
    "Perlman",
    "Pike",
    "Goldwasser",
    "Wilson",
    "Berners-Lee",
    "Hoare",
    "Diffie",
    "Matsumoto",
];
const WORDS: &[&str] = &[
    "builds",
    "compilers",
    "databases",
    "networks",
    "enjoys",
    "hiking",
    "coffee",
    "tea",
    "writes",
    "papers",
    "about",
    "caches",
    "latency",
    "throughput",
    "and",
    "loves",
    "cats",
    "dogs",
    "distributed",
    "systems",
    "teaches",
    "maths",
    "plays",
    "chess",
    "guitar",
    "reads",
    "history",
    "runs",
    "marathons",
    "bakes",
    "bread",
    "debugs",
    "kernels",
];
/// 2020-01-01T00:00:00Z; created_at is spread over the four years after it.
const EPOCH_2020: u64 = 1_577_836_800;
const FOUR_YEARS: u64 = 4 * 365 * 86_400;

/// Deletes every user and writes the [`SEED_USERS`] seeded ones (ids 1..=10,000) in one
/// transaction; ids of later inserts continue after them.
///
/// ```
/// let mut conn = rusqlite::Connection::open_in_memory()?;
/// rest_cache::Db::create_schema(&conn)?;
/// rest_cache::seed_users(&mut conn)?;
/// let n: i64 = conn.query_row("SELECT COUNT(*) FROM users", [], |r| r.get(0))?;
/// assert_eq!(n, 10_000);
/// # Ok::<(), rusqlite::Error>(())
/// ```
pub fn seed_users(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    tx.execute("DELETE FROM users", [])?;
    tx.execute("DELETE FROM sqlite_sequence WHERE name = 'users'", [])?;
    {
        let mut insert = tx.prepare(
            "INSERT INTO users (id, name, email, bio, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        let mut rng = SplitMix64(SEED);
        for id in 1..=SEED_USERS as i64 {
            let first = FIRST[rng.below(FIRST.len())];
            let last = LAST[rng.below(LAST.len())];
            let name = format!("{first} {last}");
            // The id makes the address unique whatever the names drawn.
            let email = format!(
                "{}.{}.{id}@example.com",
                first.to_ascii_lowercase(),
                last.to_ascii_lowercase()
            );
            let words = 6 + rng.below(14);
            let bio = (0..words)
                .map(|_| WORDS[rng.below(WORDS.len())])
                .collect::<Vec<_>>()
                .join(" ");
            let created_at = rfc3339(EPOCH_2020 + rng.next() % FOUR_YEARS);
            insert.execute(rusqlite::params![id, name, email, bio, created_at])?;
        }
    }
    tx.commit()
}

/// SplitMix64: tiny, fast and fully specified, so the seed is the same on every platform
/// and needs no crate whose algorithm might change between versions.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Unix seconds as `YYYY-MM-DDTHH:MM:SSZ` (Howard Hinnant's civil-from-days).
pub(crate) fn rfc3339(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(EPOCH_2020), "2020-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn splitmix_reference_value() {
        // First output for seed 0 in the reference implementation.
        assert_eq!(SplitMix64(0).next(), 0xE220_A839_7B1D_CDAF);
    }
}
