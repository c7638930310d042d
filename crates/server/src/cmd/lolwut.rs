//! LOLWUT [VERSION v] [args...]: Redis's generative art command. Version 5 draws Georg
//! Nees's "Schotter" (squares that turn and drift more row by row) in Braille
//! characters, version 6 a city skyline in four grey levels of terminal colours; any
//! other version, and the default of a 7.0 server, answers with the version line.
//! The pictures are random, as Redis's are; their size arguments are clamped as
//! Redis clamps them.

use bytes::Bytes;
use redline_resp::encode;

use super::args::int;
use super::connection::REDIS_VERSION;
use super::reply::CmdResult;
use super::{Ctx, Handler};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[("lolwut", lolwut)];

fn lolwut(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (version, rest) = match args.get(1) {
        Some(a) if args.len() >= 3 && a.eq_ignore_ascii_case(b"version") => {
            // Redis reads the version as a C `unsigned int`.
            (Some(int(&args[2])? as u32), &args[3..])
        }
        _ => (None, &args[1..]),
    };
    // Each picture reads its first sizes as integers (and no more: a third argument to
    // VERSION 6 is ignored, as in Redis); the version line reads none.
    let count = match version {
        Some(5) => 3,
        Some(6) => 2,
        _ => 0,
    };
    let sizes = rest
        .iter()
        .take(count)
        .map(|a| int(a))
        .collect::<Result<Vec<i64>, _>>()?;
    let arg = |i: usize, default: i64| sizes.get(i).copied().unwrap_or(default);
    let text = match version {
        Some(5) => {
            let cols = arg(0, 66).clamp(1, 1000) as usize;
            let per_row = arg(1, 8).clamp(1, 200) as usize;
            let per_col = arg(2, 12).clamp(1, 200) as usize;
            let mut text = braille(&schotter(cols, per_row, per_col));
            text.push_str("\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. ");
            text.push_str(REDIS_VERSION);
            text.push('\n');
            text
        }
        Some(6) => {
            let cols = arg(0, 80).clamp(1, 1000) as usize;
            let rows = arg(1, 20).clamp(1, 1000) as usize;
            let mut text = grey_levels(&skyline(cols, rows));
            text.push_str(
                "\nDedicated to the 8 bit game developers of past and present.\nOriginal 8 bit image from Plaguemon by hikikomori. Redis ver. ",
            );
            text.push_str(REDIS_VERSION);
            text.push('\n');
            text
        }
        _ => format!("Redis ver. {REDIS_VERSION}\n"),
    };
    encode::write_verbatim(ctx.out, ctx.client.protocol, b"txt", text.as_bytes());
    Ok(())
}

/// A picture of `width` × `height` pixels, each a colour number (0 is background).
struct Canvas {
    width: usize,
    height: usize,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: usize, height: usize, background: u8) -> Canvas {
        Canvas {
            width,
            height,
            pixels: vec![background; width * height],
        }
    }

    fn index(&self, x: i64, y: i64) -> Option<usize> {
        let (x, y) = (usize::try_from(x).ok()?, usize::try_from(y).ok()?);
        (x < self.width && y < self.height).then_some(x + y * self.width)
    }

    fn get(&self, x: i64, y: i64) -> u8 {
        self.index(x, y).map_or(0, |i| self.pixels[i])
    }

    fn set(&mut self, x: i64, y: i64, colour: u8) {
        if let Some(i) = self.index(x, y) {
            self.pixels[i] = colour;
        }
    }

    /// A straight line (Bresenham's), both ends included.
    fn line(&mut self, (mut x, mut y): (i64, i64), (x2, y2): (i64, i64)) {
        let (dx, dy) = ((x2 - x).abs(), (y2 - y).abs());
        let (sx, sy) = (if x < x2 { 1 } else { -1 }, if y < y2 { 1 } else { -1 });
        let mut err = dx - dy;
        loop {
            self.set(x, y, 1);
            if x == x2 && y == y2 {
                return;
            }
            let twice = err * 2;
            if twice > -dy {
                err -= dy;
                x += sx;
            }
            if twice < dx {
                err += dx;
                y += sy;
            }
        }
    }

    /// The outline of a square of side `side` centred on (x, y), turned by `angle`.
    fn square(&mut self, (x, y): (i64, i64), side: f64, angle: f64) {
        // The corners lie on a circle whose radius is half the diagonal.
        let radius = (side / std::f64::consts::SQRT_2).round();
        let corners: Vec<(i64, i64)> = (0..4)
            .map(|j| {
                let k = std::f64::consts::FRAC_PI_4
                    + angle
                    + f64::from(j) * std::f64::consts::FRAC_PI_2;
                (
                    (k.sin() * radius + x as f64).round() as i64,
                    (k.cos() * radius + y as f64).round() as i64,
                )
            })
            .collect();
        for j in 0..4 {
            self.line(corners[j], corners[(j + 1) % 4]);
        }
    }
}

/// A random number in -`bound`..`bound`.
fn jitter(bound: f64) -> f64 {
    let r = fastrand::f64() * bound;
    if fastrand::bool() {
        -r
    } else {
        r
    }
}

/// Schotter on a canvas two pixels per column: rows of squares, still at the top, then
/// turned and moved more the lower they are.
fn schotter(cols: usize, per_row: usize, per_col: usize) -> Canvas {
    let width = cols * 2;
    let padding = if width > 4 { 2 } else { 0 };
    let side = (width - padding * 2) as f64 / per_row as f64;
    let height = (side * per_col as f64) as usize + padding * 2;
    let mut canvas = Canvas::new(width, height, 0);
    for row in 0..per_col {
        for col in 0..per_row {
            let mut x = (col as f64 * side + side / 2.0) as i64 + padding as i64;
            let mut y = (row as f64 * side + side / 2.0) as i64 + padding as i64;
            let mut angle = 0.0;
            if row > 1 {
                let disorder = row as f64 / per_col as f64;
                angle = jitter(disorder);
                x += (jitter(disorder) * side / 3.0) as i64;
                y += (jitter(disorder) * side / 3.0) as i64;
            }
            canvas.square((x, y), side, angle);
        }
    }
    canvas
}

/// Each 2 × 4 block of pixels as one Braille character (U+2800 plus its dots' bits).
fn braille(canvas: &Canvas) -> String {
    // Dot bit of each pixel of a block, by (dx, dy).
    const DOTS: [(i64, i64, u32); 8] = [
        (0, 0, 0),
        (0, 1, 1),
        (0, 2, 2),
        (1, 0, 3),
        (1, 1, 4),
        (1, 2, 5),
        (0, 3, 6),
        (1, 3, 7),
    ];
    let mut text = String::new();
    for y in (0..canvas.height).step_by(4) {
        for x in (0..canvas.width).step_by(2) {
            let bits = DOTS
                .iter()
                .filter(|&&(dx, dy, _)| canvas.get(x as i64 + dx, y as i64 + dy) != 0)
                .fold(0u32, |bits, &(_, _, bit)| bits | 1 << bit);
            text.push(char::from_u32(0x2800 + bits).unwrap_or(' '));
        }
        if y != canvas.height - 1 {
            text.push('\n');
        }
    }
    text
}

/// One skyscraper standing on the bottom row: `xoff` its left edge, its roof two
/// pixels narrower on each side, and with `windows` lit windows of random grey.
fn skyscraper(canvas: &mut Canvas, xoff: i64, width: i64, height: i64, colour: u8, windows: bool) {
    let bottom = canvas.height as i64 - 1;
    let top = bottom - height + 1;
    for y in (top..=bottom).rev() {
        for x in xoff..xoff + width {
            if y == top && (x <= xoff + 1 || x >= xoff + width - 2) {
                continue;
            }
            let mut pixel = colour;
            let inside = x > xoff + 1 && x < xoff + width - 2 && y > top + 1 && y < bottom - 1;
            if windows && inside {
                let (relx, rely) = (x - (xoff + 1), y - (top + 1));
                // Windows two pixels wide and one tall (terminal cells are tall).
                if (relx / 2) % 2 == 1 && rely % 2 == 1 {
                    pixel = if relx % 2 == 1 {
                        canvas.get(x - 1, y)
                    } else {
                        loop {
                            let lit = 1 + fastrand::u8(0..2);
                            if lit != colour {
                                break lit;
                            }
                        }
                    };
                }
            }
            canvas.set(x, y, pixel);
        }
    }
}

/// A skyline: two rows of windowless buildings behind (the lighter grey furthest),
/// then black ones with windows in front, on a white sky.
fn skyline(cols: usize, rows: usize) -> Canvas {
    let mut canvas = Canvas::new(cols, rows, 3);
    let (w, h) = (cols as i64, rows as i64);
    let random = |n: i64| fastrand::i64(0..n.max(1));
    for colour in [2u8, 1] {
        let mut offset = -10;
        while offset < w {
            offset += random(8);
            let width = 10 + random(9);
            let height = if colour == 2 {
                h / 2 + random(h) / 2
            } else {
                h / 2 + random(h) / 3
            };
            skyscraper(&mut canvas, offset, width, height, colour, false);
            offset += if colour == 2 { width / 2 } else { width + 1 };
        }
    }
    let mut offset = -10;
    while offset < w {
        offset += random(8);
        let mut width = 5 + random(14);
        if width % 4 != 0 {
            width += width % 3;
        }
        let height = h / 3 + random(h) / 2;
        skyscraper(&mut canvas, offset, width, height, 0, true);
        offset += width + 5;
    }
    canvas
}

/// Each pixel as a space in one of four grey levels (foreground and background set,
/// so that terminals agree).
fn grey_levels(canvas: &Canvas) -> String {
    let mut text = String::new();
    for y in 0..canvas.height {
        for x in 0..canvas.width {
            let escape = match canvas.get(x as i64, y as i64) {
                1 => "0;90;100m",
                2 => "0;37;47m",
                3 => "0;97;107m",
                _ => "0;30;40m",
            };
            text.push_str("\x1b[");
            text.push_str(escape);
            text.push_str(" \x1b[0m");
        }
        if y != canvas.height - 1 {
            text.push('\n');
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schotter_has_the_size_redis_gives_it() {
        // 66 columns at 2 pixels each, 4 pixel rows per text line.
        let canvas = schotter(66, 8, 12);
        assert_eq!(canvas.width, 132);
        let text = braille(&canvas);
        assert!(text.lines().all(|l| l.chars().count() == 66));
        assert!(text.chars().any(|c| c != '\u{2800}' && c != '\n'));
    }

    #[test]
    fn skyline_fills_every_cell() {
        let text = grey_levels(&skyline(80, 20));
        assert_eq!(text.lines().count(), 20);
        assert!(text.lines().all(|l| l.matches(" \x1b[0m").count() == 80));
    }
}
