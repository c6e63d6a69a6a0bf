//! `doca_dpa_dev_log`'s formatting for kernels in ISA mode: the format string and the variadic
//! arguments are in the kernel's registers and memory, so the soft device formats them itself.
//!
//! The integer, character, string and pointer conversions of C's printf are supported, with
//! flags, width, precision and length modifiers; floating point is not (the DPA has no FPU in
//! RV64IMAC). A conversion the formatter does not know is copied as written.

use super::bus::DeviceBus;
use dpakit_rv::{Bus, MemFault};

/// Longest message, as native mode's C formatter allows.
pub(crate) const MAX_MESSAGE: usize = 511;
/// Longest format string or `%s` argument read from the kernel.
const MAX_STRING: u64 = 1024;

use dpakit_rv::reg::A0;

/// Reads the variadic arguments in order: a2–a7, then the caller's stack.
struct Args {
    next: usize,
}

impl Args {
    fn next(&mut self, x: &[u64; 32], bus: &mut DeviceBus<'_>) -> Result<u64, MemFault> {
        self.next += 1;
        super::bus::arg(x, bus, self.next - 1)
    }
}

/// A bounded writer into the message buffer.
struct Out<'b> {
    buf: &'b mut [u8],
    len: usize,
}

impl Out<'_> {
    fn push(&mut self, b: u8) {
        if self.len < self.buf.len() {
            self.buf[self.len] = b;
            self.len += 1;
        }
    }

    fn pad(&mut self, n: usize, c: u8) {
        for _ in 0..n {
            self.push(c);
        }
    }
}

/// Formats the message of the `doca_dpa_dev_log(level, format, ...)` call in registers `x` into `buf`;
/// returns its length.
pub(crate) fn format(
    x: &[u64; 32],
    bus: &mut DeviceBus<'_>,
    buf: &mut [u8; MAX_MESSAGE],
) -> Result<usize, MemFault> {
    let mut out = Out {
        buf: &mut buf[..],
        len: 0,
    };
    let mut args = Args { next: 2 };
    let mut at = x[A0 + 1];
    let read = |bus: &mut DeviceBus<'_>, addr: u64| bus.load(addr, 1).map(|b| b as u8);
    let end = at.saturating_add(MAX_STRING);
    while at < end {
        let c = read(bus, at)?;
        at += 1;
        if c == 0 {
            break;
        }
        if c != b'%' {
            out.push(c);
            continue;
        }
        let spec_start = at - 1;
        // Flags.
        let (mut left, mut zero, mut plus, mut space, mut alt) =
            (false, false, false, false, false);
        let mut c = read(bus, at)?;
        loop {
            match c {
                b'-' => left = true,
                b'0' => zero = true,
                b'+' => plus = true,
                b' ' => space = true,
                b'#' => alt = true,
                _ => break,
            }
            at += 1;
            c = read(bus, at)?;
        }
        // Width and precision (`*` takes an argument).
        let mut number = |bus: &mut DeviceBus<'_>,
                          at: &mut u64,
                          c: &mut u8|
         -> Result<Option<usize>, MemFault> {
            if *c == b'*' {
                *at += 1;
                *c = read(bus, *at)?;
                return Ok(Some((args.next(x, bus)? as i32).max(0) as usize));
            }
            let mut n = None;
            while c.is_ascii_digit() {
                n = Some(
                    n.unwrap_or(0usize)
                        .saturating_mul(10)
                        .saturating_add((*c - b'0') as usize)
                        .min(MAX_MESSAGE),
                );
                *at += 1;
                *c = read(bus, *at)?;
            }
            Ok(n)
        };
        let width = number(bus, &mut at, &mut c)?.unwrap_or(0);
        let precision = if c == b'.' {
            at += 1;
            c = read(bus, at)?;
            Some(number(bus, &mut at, &mut c)?.unwrap_or(0))
        } else {
            None
        };
        // Length modifiers: every integer argument is a full register; the modifier only says
        // how many of its bits count.
        let mut bits = 32;
        while matches!(c, b'h' | b'l' | b'z' | b'j' | b't' | b'L' | b'q') {
            bits = match (c, bits) {
                (b'h', 16) => 8,
                (b'h', _) => 16,
                _ => 64,
            };
            at += 1;
            c = read(bus, at)?;
        }
        at += 1;
        let mut digits = [0u8; 24];
        let (body, prefix): (&[u8], &[u8]) = match c {
            b'%' => {
                out.push(b'%');
                continue;
            }
            b'd' | b'i' => {
                let v = args.next(x, bus)?;
                let v = match bits {
                    8 => i64::from(v as i8),
                    16 => i64::from(v as i16),
                    32 => i64::from(v as i32),
                    _ => v as i64,
                };
                let n = render(v.unsigned_abs(), 10, false, &mut digits);
                let sign: &[u8] = if v < 0 {
                    b"-"
                } else if plus {
                    b"+"
                } else if space {
                    b" "
                } else {
                    b""
                };
                (&digits[n..], sign)
            }
            b'u' | b'x' | b'X' | b'o' => {
                let v = args.next(x, bus)?;
                let v = if bits >= 64 {
                    v
                } else {
                    v & ((1u64 << bits) - 1)
                };
                let base = match c {
                    b'u' => 10,
                    b'o' => 8,
                    _ => 16,
                };
                let n = render(v, base, c == b'X', &mut digits);
                let prefix: &[u8] = match (alt && v != 0, c) {
                    (true, b'x') => b"0x",
                    (true, b'X') => b"0X",
                    (true, b'o') => b"0",
                    _ => b"",
                };
                (&digits[n..], prefix)
            }
            b'p' => {
                let v = args.next(x, bus)?;
                let n = render(v, 16, false, &mut digits);
                (&digits[n..], b"0x")
            }
            b'c' => {
                digits[0] = args.next(x, bus)? as u8;
                (&digits[..1], b"")
            }
            b's' => {
                let mut s = args.next(x, bus)?;
                let limit = precision.unwrap_or(usize::MAX);
                let mut text = Vec::new();
                if s == 0 {
                    text.extend_from_slice(b"(null)");
                } else {
                    while text.len() < limit.min(MAX_MESSAGE) {
                        let b = read(bus, s)?;
                        if b == 0 {
                            break;
                        }
                        text.push(b);
                        s += 1;
                    }
                }
                let fill = width.saturating_sub(text.len());
                if !left {
                    out.pad(fill, b' ');
                }
                for &b in &text {
                    out.push(b);
                }
                if left {
                    out.pad(fill, b' ');
                }
                continue;
            }
            _ => {
                // Unknown: copy the conversion as written.
                let mut p = spec_start;
                while p < at {
                    out.push(read(bus, p)?);
                    p += 1;
                }
                continue;
            }
        };
        let zeros = match precision {
            Some(p) => p.saturating_sub(body.len()),
            None if zero && !left => width.saturating_sub(body.len() + prefix.len()),
            None => 0,
        };
        let body: &[u8] = if precision == Some(0) && body == b"0" {
            b""
        } else {
            body
        };
        let fill = width.saturating_sub(prefix.len() + zeros + body.len());
        if !left {
            out.pad(fill, b' ');
        }
        for &b in prefix {
            out.push(b);
        }
        out.pad(zeros, b'0');
        for &b in body {
            out.push(b);
        }
        if left {
            out.pad(fill, b' ');
        }
    }
    Ok(out.len)
}

/// Writes `v` in `base` at the end of `digits`; returns where the digits start.
fn render(mut v: u64, base: u64, upper: bool, digits: &mut [u8; 24]) -> usize {
    let table: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = table[(v % base) as usize];
        v /= base;
        if v == 0 {
            return i;
        }
    }
}
