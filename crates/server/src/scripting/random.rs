//! `math.random` and `math.randomseed` as Redis gives them to scripts: Lua's own
//! functions with libc's `rand()` replaced by Redis's `redisLrand48()` (the 48-bit
//! linear congruential generator of `lrand48`), so a script sees the same numbers on
//! every machine and on redis-server. One generator for the whole process, as Redis's:
//! it is not reseeded per run, and SCRIPT FLUSH does not reset it.

use mlua::{Lua, Table, Value, Variadic};
use parking_lot::Mutex;

use super::args;

/// `lrand48`'s state: three 16-bit words of X, the multiplier's, and the addend.
struct Lrand48 {
    x: [u32; 3],
    a: [u32; 3],
    c: u32,
}

const X0: u32 = 0x330E;
const A: [u32; 3] = [0xE66D, 0xDEEC, 0x5];
const C: u32 = 0xB;
const MASK: u32 = 0xFFFF;

/// The generator as the process starts (Redis's static initial state).
static GENERATOR: Mutex<Lrand48> = Mutex::new(Lrand48 {
    x: [X0, 0xABCD, 0x1234],
    a: A,
    c: C,
});

/// Redis's `REDIS_LRAND48_MAX`.
const LRAND48_MAX: i32 = i32::MAX;

impl Lrand48 {
    /// `redisSrand48`.
    fn seed(&mut self, seed: i32) {
        let seed = seed as u32;
        self.x = [X0, seed & MASK, (seed >> 16) & MASK];
        self.a = A;
        self.c = C;
    }

    /// `redisLrand48`: the next 31-bit number.
    fn next(&mut self) -> i32 {
        self.step();
        ((self.x[2] << 15) + (self.x[1] >> 1)) as i32
    }

    /// One step of X = a·X + c mod 2^48, in 16-bit words as Redis's `next()`.
    fn step(&mut self) {
        let (a, x) = (self.a, self.x);
        let mul = |p: u32, q: u32| {
            let l = p.wrapping_mul(q);
            [l & MASK, (l >> 16) & MASK]
        };
        let carry = |p: u32, q: u32| u32::from(u64::from(p) + u64::from(q) > u64::from(MASK));
        let mut p = mul(a[0], x[0]);
        let carry0 = carry(p[0], self.c);
        p[0] = (p[0].wrapping_add(self.c)) & MASK;
        let carry1 = carry(p[1], carry0);
        p[1] = (p[1].wrapping_add(carry0)) & MASK;
        let q = mul(a[0], x[1]);
        let carry0 = carry(p[1], q[0]);
        p[1] = (p[1].wrapping_add(q[0])) & MASK;
        let r = mul(a[1], x[0]);
        self.x[2] = carry0
            .wrapping_add(carry1)
            .wrapping_add(carry(p[1], r[0]))
            .wrapping_add(q[1])
            .wrapping_add(r[1])
            .wrapping_add(a[0].wrapping_mul(x[2]))
            .wrapping_add(a[1].wrapping_mul(x[1]))
            .wrapping_add(a[2].wrapping_mul(x[0]))
            & MASK;
        self.x[1] = (p[1].wrapping_add(r[0])) & MASK;
        self.x[0] = p[0];
    }
}

/// `luaL_checkint`: the argument as `luaL_checkinteger` reads it, cut to a C `int`.
fn check_int(lua: &Lua, argv: &[Value], n: usize, func: &str) -> mlua::Result<i32> {
    args::check_integer(lua, argv, n, func).map(|v| v as i32)
}

/// Replaces `math.random` and `math.randomseed` in `math`.
pub fn install(lua: &Lua, math: &Table) -> mlua::Result<()> {
    let random = args::function(lua, |lua, argv: Variadic<Value>| {
        if !super::active::is_published() {
            return Err(mlua::Error::runtime(
                "math.random can only be called inside a script invocation",
            ));
        }
        // The `%` avoids 1, as in Lua's own.
        let r = f64::from(GENERATOR.lock().next() % LRAND48_MAX) / f64::from(LRAND48_MAX);
        match argv.len() {
            0 => Ok(r),
            1 => {
                let u = check_int(lua, &argv, 1, "random")?;
                if u < 1 {
                    return Err(args::arg_error(1, "random", "interval is empty"));
                }
                Ok((r * f64::from(u)).floor() + 1.0)
            }
            2 => {
                let l = check_int(lua, &argv, 1, "random")?;
                let u = check_int(lua, &argv, 2, "random")?;
                if l > u {
                    return Err(args::arg_error(2, "random", "interval is empty"));
                }
                let span = u.wrapping_sub(l).wrapping_add(1);
                Ok((r * f64::from(span)).floor() + f64::from(l))
            }
            _ => Err(mlua::Error::runtime("wrong number of arguments")),
        }
    })?;
    let randomseed = args::function(lua, |lua, argv: Variadic<Value>| {
        if !super::active::is_published() {
            return Err(mlua::Error::runtime(
                "math.randomseed can only be called inside a script invocation",
            ));
        }
        let seed = check_int(lua, &argv, 1, "randomseed")?;
        GENERATOR.lock().seed(seed);
        Ok(())
    })?;
    math.raw_set("random", random)?;
    math.raw_set("randomseed", randomseed)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reseeding_repeats_the_sequence() {
        let mut g = Lrand48 {
            x: [0; 3],
            a: A,
            c: C,
        };
        g.seed(1);
        let first: Vec<i32> = (0..5).map(|_| g.next()).collect();
        g.seed(1);
        let again: Vec<i32> = (0..5).map(|_| g.next()).collect();
        assert_eq!(first, again);
        assert!(first.iter().all(|&n| n >= 0));
    }
}
