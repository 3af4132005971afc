//! The one colour module: every renderer paints through [`Style`], so the
//! escape codes live here and nowhere else.
//!
//! Whether to colour is the caller's decision (the binary looks at the
//! terminal, `NO_COLOR`, `TERM=dumb` and `--color`); renderers only get the
//! answer. The codes come from `anstyle`, the crate clap already links, so
//! this costs no extra build.

use anstyle::{AnsiColor, Color};

/// Headings and names.
pub const BOLD: anstyle::Style = anstyle::Style::new().bold();
/// Secondary text, such as notes under a progress line.
pub const DIM: anstyle::Style = anstyle::Style::new().dimmed();
/// Worse results, failures.
pub const RED: anstyle::Style = fg(AnsiColor::Red);
/// Better results, the headline number.
pub const GREEN: anstyle::Style = fg(AnsiColor::Green);
/// Warnings, unstable measurements.
pub const YELLOW: anstyle::Style = fg(AnsiColor::Yellow);

/// Carriage return and erase-line: redraws a progress line in place. Not a
/// style (anstyle has no cursor control), but kept here so every progress
/// display uses the same sequence.
pub const CLEAR_LINE: &str = "\r\x1b[2K";

const fn fg(c: AnsiColor) -> anstyle::Style {
    anstyle::Style::new().fg_color(Some(Color::Ansi(c)))
}

/// Whether output is coloured, and the painting that follows from it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    /// Use ANSI colours and bold; off for pipes, files and `NO_COLOR`.
    pub color: bool,
}

impl Style {
    /// A style that colours when `color` is true.
    pub const fn new(color: bool) -> Style {
        Style { color }
    }

    /// `s` wrapped in `style`'s codes when colour is on. Callers pad before
    /// painting, because escape codes would otherwise count as width.
    pub fn paint(&self, style: anstyle::Style, s: &str) -> String {
        if self.color && !style.is_plain() {
            format!("{}{s}{}", style.render(), style.render_reset())
        } else {
            s.to_string()
        }
    }

    /// `s` in bold.
    pub fn bold(&self, s: &str) -> String {
        self.paint(BOLD, s)
    }

    /// `s` dimmed.
    pub fn dim(&self, s: &str) -> String {
        self.paint(DIM, s)
    }

    /// `s` in red.
    pub fn red(&self, s: &str) -> String {
        self.paint(RED, s)
    }

    /// `s` in green.
    pub fn green(&self, s: &str) -> String {
        self.paint(GREEN, s)
    }

    /// `s` in yellow.
    pub fn yellow(&self, s: &str) -> String {
        self.paint(YELLOW, s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_plain_sgr_and_absent_without_colour() {
        let on = Style::new(true);
        assert_eq!(on.bold("a"), "\x1b[1ma\x1b[0m");
        assert_eq!(on.dim("a"), "\x1b[2ma\x1b[0m");
        assert_eq!(on.red("a"), "\x1b[31ma\x1b[0m");
        assert_eq!(on.green("a"), "\x1b[32ma\x1b[0m");
        assert_eq!(on.yellow("a"), "\x1b[33ma\x1b[0m");
        assert_eq!(on.paint(anstyle::Style::new(), "a"), "a");
        let off = Style::new(false);
        assert_eq!(off.red("a"), "a");
        assert_eq!(off.bold("µs"), "µs");
    }
}
