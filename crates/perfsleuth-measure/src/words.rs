//! Shell-words style splitting that refuses shell syntax instead of silently
//! passing `|` or `>` to the program as an argument.

use std::fmt;

/// Why a command line could not be split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SplitError {
    /// The line is empty or only white space.
    Empty,
    /// A quote was opened and never closed.
    UnterminatedQuote(char),
    /// A trailing backslash escapes nothing.
    TrailingBackslash,
    /// Unquoted shell syntax that only a shell would interpret.
    ShellSyntax(String),
}

impl fmt::Display for SplitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SplitError::Empty => write!(f, "empty command"),
            SplitError::UnterminatedQuote(q) => write!(f, "unterminated {q} quote"),
            SplitError::TrailingBackslash => write!(f, "trailing backslash"),
            SplitError::ShellSyntax(s) => write!(f, "shell syntax `{s}` needs a shell"),
        }
    }
}

impl std::error::Error for SplitError {}

/// Whether `program` names a POSIX-style shell (by its file name).
fn is_shell(program: &str) -> bool {
    let name = program.rsplit('/').next().unwrap_or(program);
    matches!(
        name,
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash"
    )
}

/// Splits a command line into words as a POSIX shell would (quotes and
/// backslashes), without running one. Unquoted `|`, `&`, `;`, `<`, `>`,
/// backticks and `$` expansions are errors: executed directly they would
/// reach the program as literal arguments, which is never what was meant.
pub fn split_command(line: &str) -> Result<Vec<String>, SplitError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(ch) => word.push(ch),
                        None => return Err(SplitError::UnterminatedQuote('\'')),
                    }
                }
            }
            '"' => {
                in_word = true;
                // The script of an explicit `sh -c "…"`: its `$` and
                // backticks are the inner shell's to expand (hyperfine -N
                // passes them so too), not syntax lost without a shell.
                let script = words.len() == 2 && words[1] == "-c" && is_shell(&words[0]);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(ch @ ('"' | '\\' | '$' | '`')) => word.push(ch),
                            Some('\n') => {}
                            Some(ch) => {
                                word.push('\\');
                                word.push(ch);
                            }
                            None => return Err(SplitError::UnterminatedQuote('"')),
                        },
                        Some('`') if !script => return Err(SplitError::ShellSyntax("`".into())),
                        Some('$') if !script && expands('$', chars.peek().copied()) => {
                            return Err(SplitError::ShellSyntax(dollar(&mut chars)));
                        }
                        Some(ch) => word.push(ch),
                        None => return Err(SplitError::UnterminatedQuote('"')),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(ch) => {
                    in_word = true;
                    word.push(ch);
                }
                None => return Err(SplitError::TrailingBackslash),
            },
            '~' if !in_word => return Err(SplitError::ShellSyntax("~".into())),
            '=' if words.is_empty() && in_word && is_name(&word) => {
                // `VAR=value cmd`: an assignment only a shell performs.
                return Err(SplitError::ShellSyntax(format!("{word}=")));
            }
            '|' | '&' | ';' | '<' | '>' | '`' => {
                let mut op = c.to_string();
                if let Some(&next) = chars.peek() {
                    if matches!(
                        (c, next),
                        ('|', '|') | ('&', '&') | ('>', '>') | ('<', '<') | (';', ';')
                    ) {
                        op.push(next);
                    }
                }
                return Err(SplitError::ShellSyntax(op));
            }
            '$' if expands(c, chars.peek().copied()) => {
                return Err(SplitError::ShellSyntax(dollar(&mut chars)));
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err(SplitError::Empty);
    }
    Ok(words)
}

/// Whether `word` is a shell variable name (what may stand before `=`).
fn is_name(word: &str) -> bool {
    let mut chars = word.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `$` or a backtick followed by `next` starts an expansion.
/// The expansion after a `$`, as the user wrote it: `$HOME`, `$1`, `$?`,
/// `$(`, `${`: the whole variable name, so the message quotes their text.
fn dollar(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    let mut op = String::from("$");
    match chars.peek().copied() {
        Some(n) if n == '_' || n.is_ascii_alphabetic() => {
            while let Some(&n) = chars.peek() {
                if n == '_' || n.is_ascii_alphanumeric() {
                    op.push(n);
                    chars.next();
                } else {
                    break;
                }
            }
        }
        Some(n) => op.push(n),
        None => {}
    }
    op
}

fn expands(c: char, next: Option<char>) -> bool {
    match c {
        '`' => true,
        _ => {
            matches!(next, Some(n) if n == '(' || n == '{' || n == '_' || n.is_ascii_alphanumeric() || "?$!#@*-".contains(n))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Vec<String> {
        split_command(s).unwrap()
    }

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(ok("sleep 0.1"), ["sleep", "0.1"]);
        assert_eq!(ok("  a   'b c'  \"d e\" "), ["a", "b c", "d e"]);
        assert_eq!(ok(r#"grep "a\"b" x\ y"#), ["grep", "a\"b", "x y"]);
        assert_eq!(ok("echo ''"), ["echo", ""]);
        assert_eq!(ok("a'b'\"c\"d"), ["abcd"]);
        assert_eq!(ok(r#"printf "\n""#), ["printf", "\\n"]);
    }

    #[test]
    fn quoted_metacharacters_are_plain_text() {
        assert_eq!(ok("echo '|' \"a > b\" \\;"), ["echo", "|", "a > b", ";"]);
        assert_eq!(ok("echo 'cost $5' '$(x)'"), ["echo", "cost $5", "$(x)"]);
        assert_eq!(ok("echo a$ 5$"), ["echo", "a$", "5$"]);
        // `=` after the program name and `~` inside a word are plain text.
        assert_eq!(ok("./bench --size=10 a~b"), ["./bench", "--size=10", "a~b"]);
        assert_eq!(ok("'FOO=1' x"), ["FOO=1", "x"]);
    }

    #[test]
    fn shell_syntax_is_refused() {
        for (line, op) in [
            ("ls | wc -l", "|"),
            ("make && ./a", "&&"),
            ("a; b", ";"),
            ("echo hi > out", ">"),
            ("cat < in", "<"),
            ("sleep 1 &", "&"),
            ("echo $(date)", "$("),
            ("echo $HOME", "$HOME"),
            ("echo $1", "$1"),
            ("echo \"$HOME/x\"", "$HOME"),
            ("echo `date`", "`"),
            ("a || b", "||"),
            ("FOO=1 ./bench", "FOO="),
            ("ls ~/data", "~"),
        ] {
            assert_eq!(
                split_command(line),
                Err(SplitError::ShellSyntax(op.into())),
                "{line}"
            );
        }
    }

    #[test]
    fn the_script_of_an_explicit_shell_keeps_its_expansions_for_that_shell() {
        assert_eq!(
            split_command("sh -c \"echo $HOME `date`\"").unwrap(),
            ["sh", "-c", "echo $HOME `date`"]
        );
        assert_eq!(
            split_command("/bin/bash -c \"x=$(nproc); echo $x\"").unwrap(),
            ["/bin/bash", "-c", "x=$(nproc); echo $x"]
        );
        // Anywhere else it is still refused: no shell would see it.
        for line in [
            "python3 -c \"print('$HOME')\"",
            "sh -x \"$HOME\"",
            "sh -c echo $HOME",
        ] {
            assert!(
                matches!(split_command(line), Err(SplitError::ShellSyntax(_))),
                "{line}"
            );
        }
    }

    #[test]
    fn malformed_lines_are_errors() {
        assert_eq!(split_command("   "), Err(SplitError::Empty));
        assert_eq!(
            split_command("echo 'x"),
            Err(SplitError::UnterminatedQuote('\''))
        );
        assert_eq!(
            split_command("echo \"x"),
            Err(SplitError::UnterminatedQuote('"'))
        );
        assert_eq!(
            split_command("echo x\\"),
            Err(SplitError::TrailingBackslash)
        );
    }
}
