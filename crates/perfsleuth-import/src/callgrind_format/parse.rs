//! The streaming parser: one line at a time, state in a small struct.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use super::{FunctionProfile, ParseError, Profile};

/// Longest line accepted (C++ symbol names can be long, but not this long);
/// guards against reading a whole binary file as one "line".
const MAX_LINE: usize = 1 << 20;

/// Most distinct events accepted, over all parts. Callgrind writes about 20
/// with every simulation on; every function holds three costs per event, so
/// a file naming 100 000 events and then 10 000 functions (under 1 MiB)
/// would otherwise take 24 GB.
const MAX_EVENTS: usize = 64;

/// Parses one callgrind output file. See [`parse_reader`].
pub fn parse_file(path: &Path) -> Result<Profile, ParseError> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| ParseError {
        file: name.clone(),
        line: 0,
        message: format!("cannot open: {e}"),
    })?;
    parse_reader(BufReader::with_capacity(256 * 1024, file), &name)
}

/// Parses callgrind output from `r`; `name` is used in error messages and
/// counts as one file in [`Profile::files_read`].
///
/// Accepted: every line kind of format version 1 (header lines, `fl= fi= fe=
/// fn= ob= cfi= cfl= cfn= cob= jfi= jfn=` with or without name compression,
/// `calls=`, `jump=`, `jcnd=`, cost lines with any `positions:` and
/// subposition compression, `summary:`, `totals:`, several parts, comments).
/// Refused with the line number: unknown `key=` lines, malformed numbers,
/// more cost columns than events, more than 64 distinct events, a name id
/// used before it is defined, a
/// number above `u64::MAX`, a file without `events:`, a `calls=` line not
/// followed by its cost line, and — for files whose `creator:` is callgrind —
/// a last part without `totals:` or a last line without newline (callgrind
/// always ends its files with `totals: …\n`, so either means truncation).
pub fn parse_reader(mut r: impl BufRead, name: &str) -> Result<Profile, ParseError> {
    let mut p = Parser::new(name);
    // Lines are parsed in place in the reader's buffer; only a line that
    // straddles two buffer fills is copied into `carry`.
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let avail = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(p.err_at(p.line_no + 1, format!("read error: {e}"))),
        };
        if avail.is_empty() {
            break;
        }
        let mut used = 0;
        while let Some(nl) = avail[used..].iter().position(|b| *b == b'\n') {
            let end = used + nl;
            p.line_no += 1;
            if carry.is_empty() {
                p.line(strip_cr(&avail[used..end]))?;
            } else {
                carry.extend_from_slice(&avail[used..end]);
                p.line(strip_cr(&carry))?;
                carry.clear();
            }
            used = end + 1;
        }
        carry.extend_from_slice(&avail[used..]);
        let consumed = avail.len();
        r.consume(consumed);
        if carry.len() > MAX_LINE {
            return Err(p.err_at(p.line_no + 1, format!("line longer than {MAX_LINE} bytes")));
        }
    }
    let ended_with_newline = carry.is_empty();
    if !ended_with_newline {
        p.line_no += 1;
        p.line(strip_cr(&carry))?;
    }
    p.finish(ended_with_newline)
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Name compression contexts: files (`fl fi fe cfi cfl jfi`), functions
/// (`fn cfn jfn`), objects (`ob cob`) each share one id space, as callgrind
/// and `callgrind_annotate` use them.
#[derive(Clone, Copy)]
enum Ctx {
    File = 0,
    Func = 1,
    Obj = 2,
}

struct Func {
    obj: u32,
    file: u32,
    name: u32,
    self_cost: Vec<u64>,
    /// Inclusive cost of calls to other functions.
    outgoing: Vec<u64>,
    /// Inclusive cost of calls into it from other functions.
    incoming: Vec<u64>,
    calls: u64,
    /// Seen as `fn=` (not only as a call target).
    defined: bool,
}

struct PendingCall {
    target: usize,
    recursive: bool,
    line: usize,
}

struct Parser<'n> {
    name: &'n str,
    line_no: usize,
    // Interned strings; id 0 is "".
    strings: Vec<String>,
    string_ids: HashMap<String, u32>,
    compressed: [HashMap<u64, u32>; 3],
    events: Vec<String>,
    funcs: Vec<Func>,
    func_ids: HashMap<(u32, u32), usize>,
    commands: Vec<String>,
    callgrind_made: bool,
    totals: Vec<u64>,
    parts: usize,
    // Current part.
    part_open: bool,
    in_body: bool,
    /// Column of a cost line → index into `events`.
    columns: Vec<usize>,
    positions: usize,
    summary: Option<Vec<u64>>,
    part_totals: Option<Vec<u64>>,
    part_self: Vec<u64>,
    // Current position.
    obj: u32,
    file: u32,
    func: Option<usize>,
    call_obj: Option<u32>,
    call_file: Option<u32>,
    call_fn: Option<u32>,
    pending: Option<PendingCall>,
    scratch: Vec<u64>,
}

impl<'n> Parser<'n> {
    fn new(name: &'n str) -> Self {
        let mut string_ids = HashMap::new();
        string_ids.insert(String::new(), 0);
        Parser {
            name,
            line_no: 0,
            strings: vec![String::new()],
            string_ids,
            compressed: Default::default(),
            events: Vec::new(),
            funcs: Vec::new(),
            func_ids: HashMap::new(),
            commands: Vec::new(),
            callgrind_made: false,
            totals: Vec::new(),
            parts: 0,
            part_open: false,
            in_body: false,
            columns: Vec::new(),
            positions: 1,
            summary: None,
            part_totals: None,
            part_self: Vec::new(),
            obj: 0,
            file: 0,
            func: None,
            call_obj: None,
            call_file: None,
            call_fn: None,
            pending: None,
            scratch: Vec::new(),
        }
    }

    fn err_at(&self, line: usize, message: String) -> ParseError {
        ParseError {
            file: self.name.to_string(),
            line,
            message,
        }
    }

    fn err(&self, message: String) -> ParseError {
        self.err_at(self.line_no, message)
    }

    fn line(&mut self, line: &[u8]) -> Result<(), ParseError> {
        let Some(&first) = line.first() else {
            return Ok(());
        };
        if first == b'#'
            || (matches!(first, b' ' | b'\t') && line.iter().all(|b| *b == b' ' || *b == b'\t'))
        {
            return Ok(());
        }
        if first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'*') {
            return self.cost_line(line);
        }
        if self.pending.is_some() {
            return Err(
                self.err("expected the cost line of the preceding `calls=` line".to_string())
            );
        }
        let key_len = line
            .iter()
            .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
            .unwrap_or(line.len());
        let (key, rest) = line.split_at(key_len);
        match rest.first() {
            Some(b'=') if !key.is_empty() => self.spec_line(key, &rest[1..]),
            Some(b':') if !key.is_empty() => self.header_line(key, trim(&rest[1..])),
            _ => Err(self.err(format!("not a callgrind line: `{}`", snippet(line)))),
        }
    }

    // ---- header lines -------------------------------------------------

    fn header_line(&mut self, key: &[u8], value: &[u8]) -> Result<(), ParseError> {
        match key {
            b"summary" => {
                self.open_part();
                let v = self.costs_of(value, "summary:")?;
                self.summary = Some(v);
                return Ok(());
            }
            b"totals" => {
                self.open_part();
                let v = self.costs_of(value, "totals:")?;
                self.part_totals = Some(v);
                return Ok(());
            }
            _ => {}
        }
        // Any other header line after body lines starts the next part.
        if self.in_body {
            self.finish_part()?;
        }
        self.open_part();
        match key {
            b"version" => {
                let v = std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.split('.').next()?.trim().parse::<u64>().ok());
                match v {
                    Some(0 | 1) => {}
                    Some(v) => {
                        return Err(self.err(format!("unsupported format version {v}")));
                    }
                    None => {
                        return Err(self.err(format!("bad version: `{}`", snippet(value))));
                    }
                }
            }
            b"creator" => self.callgrind_made = value.starts_with(b"callgrind"),
            b"cmd" => {
                let cmd = String::from_utf8_lossy(value).into_owned();
                if !self.commands.contains(&cmd) {
                    self.commands.push(cmd);
                }
            }
            b"positions" => {
                let mut n = 0;
                for word in value.split(|b| *b == b' ' || *b == b'\t') {
                    match word {
                        b"" => {}
                        b"instr" | b"line" | b"bb" | b"addr" => n += 1,
                        _ => {
                            return Err(self.err(format!("unknown position `{}`", snippet(word))));
                        }
                    }
                }
                if n == 0 {
                    return Err(self.err("`positions:` names no position".to_string()));
                }
                self.positions = n;
            }
            b"events" => {
                let mut columns = Vec::new();
                for word in value.split(|b| *b == b' ' || *b == b'\t') {
                    if word.is_empty() {
                        continue;
                    }
                    let name = String::from_utf8_lossy(word);
                    let i = match self.events.iter().position(|e| *e == name) {
                        Some(i) => i,
                        None if self.events.len() >= MAX_EVENTS => {
                            return Err(self.err(format!(
                                "more than {MAX_EVENTS} events: not callgrind output"
                            )));
                        }
                        None => {
                            self.events.push(name.into_owned());
                            self.events.len() - 1
                        }
                    };
                    if columns.contains(&i) {
                        return Err(self.err(format!("event `{}` listed twice", self.events[i])));
                    }
                    columns.push(i);
                }
                if columns.is_empty() {
                    return Err(self.err("`events:` names no event".to_string()));
                }
                self.columns = columns;
            }
            // pid, thread, part, desc, event (long names), and keys from
            // future versions: nothing to keep.
            _ => {}
        }
        Ok(())
    }

    fn open_part(&mut self) {
        self.part_open = true;
    }

    fn finish_part(&mut self) -> Result<(), ParseError> {
        if !self.part_open {
            return Ok(());
        }
        let n = self.events.len();
        fn nonzero(v: &Option<Vec<u64>>) -> Option<&Vec<u64>> {
            v.as_ref().filter(|v| v.iter().any(|c| *c != 0))
        }
        let part = nonzero(&self.summary)
            .or_else(|| nonzero(&self.part_totals))
            .unwrap_or(&self.part_self)
            .clone();
        self.totals.resize(n, 0);
        for (i, c) in part.iter().enumerate() {
            self.totals[i] = self.totals[i]
                .checked_add(*c)
                .ok_or_else(|| self.err("totals overflow 64 bits".to_string()))?;
        }
        self.parts += 1;
        self.part_open = false;
        self.in_body = false;
        self.summary = None;
        self.part_totals = None;
        self.part_self.clear();
        Ok(())
    }

    /// Costs of a `summary:`/`totals:` line, indexed like `events`.
    fn costs_of(&mut self, value: &[u8], what: &str) -> Result<Vec<u64>, ParseError> {
        if self.columns.is_empty() {
            return Err(self.err(format!("`{what}` before `events:`")));
        }
        let mut v = vec![0; self.events.len()];
        for (col, word) in words(value).enumerate() {
            let Some(&i) = self.columns.get(col) else {
                return Err(self.err(format!(
                    "`{what}` has more than {} costs",
                    self.columns.len()
                )));
            };
            v[i] = self.number(word)?;
        }
        Ok(v)
    }

    // ---- body lines ---------------------------------------------------

    fn spec_line(&mut self, key: &[u8], value: &[u8]) -> Result<(), ParseError> {
        self.open_part();
        self.in_body = true;
        match key {
            b"fn" => {
                let name = self.name_of(Ctx::Func, value)?;
                let (obj, file) = (self.obj, self.file);
                let i = self.function(obj, name, file);
                let f = &mut self.funcs[i];
                if !f.defined {
                    f.defined = true;
                    f.file = file;
                }
                self.func = Some(i);
                self.clear_call();
            }
            b"fl" => {
                self.file = self.name_of(Ctx::File, value)?;
                self.clear_call();
            }
            b"fi" | b"fe" => {
                // Inlined code of the current function: costs stay with it.
                self.name_of(Ctx::File, value)?;
            }
            b"ob" => {
                self.obj = self.name_of(Ctx::Obj, value)?;
                self.clear_call();
            }
            b"cob" => self.call_obj = Some(self.name_of(Ctx::Obj, value)?),
            b"cfi" | b"cfl" => self.call_file = Some(self.name_of(Ctx::File, value)?),
            b"cfn" => self.call_fn = Some(self.name_of(Ctx::Func, value)?),
            b"jfi" => {
                self.name_of(Ctx::File, value)?;
            }
            b"jfn" => {
                self.name_of(Ctx::Func, value)?;
            }
            b"calls" => self.calls_line(value)?,
            b"jump" | b"jcnd" => {
                let mut w = words(value);
                let count = w.next().unwrap_or(b"");
                let mut parts = count.splitn(2, |b| *b == b'/');
                for c in parts.by_ref() {
                    self.number(c)?;
                }
                for sub in w {
                    self.subposition(sub)?;
                }
            }
            _ => {
                return Err(self.err(format!(
                    "unknown specification `{}=`",
                    String::from_utf8_lossy(key)
                )));
            }
        }
        Ok(())
    }

    fn clear_call(&mut self) {
        self.call_obj = None;
        self.call_file = None;
        self.call_fn = None;
    }

    fn calls_line(&mut self, value: &[u8]) -> Result<(), ParseError> {
        let mut w = words(value);
        let count = self.number(w.next().unwrap_or(b""))?;
        let mut target_positions = 0;
        for sub in w {
            self.subposition(sub)?;
            target_positions += 1;
        }
        if target_positions == 0 {
            return Err(self.err("`calls=` without target position".to_string()));
        }
        let Some(caller) = self.func else {
            return Err(self.err("`calls=` before any `fn=`".to_string()));
        };
        let Some(callee) = self.call_fn else {
            return Err(self.err("`calls=` without a preceding `cfn=`".to_string()));
        };
        let obj = self.call_obj.unwrap_or(self.obj);
        let file = self.call_file.unwrap_or(self.file);
        let target = self.function(obj, callee, file);
        match self.funcs[target].calls.checked_add(count) {
            Some(c) => self.funcs[target].calls = c,
            None => return Err(self.err("call count overflows 64 bits".to_string())),
        }
        self.pending = Some(PendingCall {
            target,
            recursive: target == caller,
            line: self.line_no,
        });
        // cob/cfi name the target of this call only.
        self.call_obj = None;
        self.call_file = None;
        Ok(())
    }

    fn cost_line(&mut self, line: &[u8]) -> Result<(), ParseError> {
        self.open_part();
        self.in_body = true;
        if self.columns.is_empty() {
            return Err(self.err("cost line before `events:`".to_string()));
        }
        let Some(func) = self.func else {
            return Err(self.err("cost line before any `fn=`".to_string()));
        };
        let mut w = words(line);
        for _ in 0..self.positions {
            match w.next() {
                Some(sub) => self.subposition(sub)?,
                None => {
                    return Err(self.err(format!(
                        "cost line with fewer than {} positions",
                        self.positions
                    )));
                }
            }
        }
        let n = self.events.len();
        if let Some(call) = self.pending.take() {
            let mut scratch = std::mem::take(&mut self.scratch);
            scratch.clear();
            scratch.resize(n, 0);
            for (col, word) in w.enumerate() {
                let Some(&i) = self.columns.get(col) else {
                    return Err(self.too_many_costs());
                };
                scratch[i] = self.number(word)?;
            }
            let result = self.add_call(func, call, &scratch);
            self.scratch = scratch;
            return result;
        }
        // The common case: add straight into the function and the part.
        let mut self_cost = std::mem::take(&mut self.funcs[func].self_cost);
        if self_cost.len() < n {
            self_cost.resize(n, 0);
        }
        if self.part_self.len() < n {
            self.part_self.resize(n, 0);
        }
        let mut result = Ok(());
        for (col, word) in w.enumerate() {
            let Some(&i) = self.columns.get(col) else {
                result = Err(self.too_many_costs());
                break;
            };
            let c = match self.number(word) {
                Ok(c) => c,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            match (
                self_cost[i].checked_add(c),
                self.part_self[i].checked_add(c),
            ) {
                (Some(a), Some(b)) => {
                    self_cost[i] = a;
                    self.part_self[i] = b;
                }
                _ => {
                    result = Err(self.err("cost overflows 64 bits".to_string()));
                    break;
                }
            }
        }
        self.funcs[func].self_cost = self_cost;
        result
    }

    fn too_many_costs(&self) -> ParseError {
        self.err(format!("more costs than the {} events", self.columns.len()))
    }

    fn add_call(
        &mut self,
        caller: usize,
        call: PendingCall,
        cost: &[u64],
    ) -> Result<(), ParseError> {
        if call.recursive {
            return Ok(());
        }
        let ok = add_into(&mut self.funcs[caller].outgoing, cost).is_ok()
            && add_into(&mut self.funcs[call.target].incoming, cost).is_ok();
        if ok {
            Ok(())
        } else {
            Err(self.err("inclusive cost overflows 64 bits".to_string()))
        }
    }

    fn function(&mut self, obj: u32, name: u32, file: u32) -> usize {
        if let Some(&i) = self.func_ids.get(&(obj, name)) {
            return i;
        }
        self.funcs.push(Func {
            obj,
            file,
            name,
            self_cost: Vec::new(),
            outgoing: Vec::new(),
            incoming: Vec::new(),
            calls: 0,
            defined: false,
        });
        let i = self.funcs.len() - 1;
        self.func_ids.insert((obj, name), i);
        i
    }

    /// Resolves `(id) name`, `(id)` or `name` to an interned string id.
    fn name_of(&mut self, ctx: Ctx, value: &[u8]) -> Result<u32, ParseError> {
        let value = trim_start(value);
        if value.len() >= 2 && value[0] == b'(' && value[1].is_ascii_digit() {
            let Some(close) = value.iter().position(|b| *b == b')') else {
                return Err(self.err(format!("unterminated name id in `{}`", snippet(value))));
            };
            let id = self.number(&value[1..close])?;
            let rest = trim_start(&value[close + 1..]);
            if rest.is_empty() {
                return match self.compressed[ctx as usize].get(&id) {
                    Some(&s) => Ok(s),
                    None => Err(self.err(format!("name id ({id}) used before it is defined"))),
                };
            }
            let s = self.intern(rest);
            self.compressed[ctx as usize].insert(id, s);
            return Ok(s);
        }
        Ok(self.intern(value))
    }

    fn intern(&mut self, bytes: &[u8]) -> u32 {
        let s = String::from_utf8_lossy(bytes);
        if let Some(&id) = self.string_ids.get(s.as_ref()) {
            return id;
        }
        let s = s.into_owned();
        let id = self.strings.len() as u32;
        self.strings.push(s.clone());
        self.string_ids.insert(s, id);
        id
    }

    /// A decimal or `0x` hexadecimal number.
    fn number(&self, word: &[u8]) -> Result<u64, ParseError> {
        parse_u64(word).ok_or_else(|| {
            if !word.is_empty() && word.iter().all(u8::is_ascii_hexdigit) {
                self.err(format!("number `{}` overflows 64 bits", snippet(word)))
            } else {
                self.err(format!("expected a number, found `{}`", snippet(word)))
            }
        })
    }

    /// `N`, `0xN`, `+N`, `-N` or `*`. Positions are not kept (costs are
    /// summed per function), only checked.
    fn subposition(&self, word: &[u8]) -> Result<(), ParseError> {
        match word {
            b"*" => Ok(()),
            [b'+' | b'-', rest @ ..] => self.number(rest).map(|_| ()),
            _ => self.number(word).map(|_| ()),
        }
    }

    fn finish(mut self, ended_with_newline: bool) -> Result<Profile, ParseError> {
        if let Some(call) = &self.pending {
            return Err(self.err_at(
                call.line,
                "file ends after a `calls=` line without its cost line (truncated?)".to_string(),
            ));
        }
        if self.events.is_empty() {
            let what = if self.line_no == 0 {
                "empty file".to_string()
            } else {
                "no `events:` line: not callgrind output".to_string()
            };
            return Err(self.err_at(self.line_no.max(1), what));
        }
        if self.callgrind_made {
            if !ended_with_newline {
                return Err(self.err(
                    "truncated: the last line has no newline (callgrind ends its files with `totals:`)"
                        .to_string(),
                ));
            }
            if self.part_totals.is_none() && self.part_open {
                return Err(self.err(
                    "truncated: the last part has no `totals:` line (callgrind always writes one)"
                        .to_string(),
                ));
            }
        }
        self.finish_part()?;
        let n = self.events.len();
        self.totals.resize(n, 0);
        let strings = std::mem::take(&mut self.strings);
        let totals = self.totals;
        let functions = self
            .funcs
            .into_iter()
            .map(|mut f| {
                for v in [&mut f.self_cost, &mut f.outgoing, &mut f.incoming] {
                    v.resize(n, 0);
                }
                let inclusive = (0..n)
                    .map(|i| {
                        let c = if f.defined {
                            f.self_cost[i].saturating_add(f.outgoing[i])
                        } else {
                            f.incoming[i]
                        };
                        c.min(totals[i].max(f.self_cost[i]))
                    })
                    .collect();
                FunctionProfile {
                    object: strings[f.obj as usize].clone(),
                    file: strings[f.file as usize].clone(),
                    function: strings[f.name as usize].clone(),
                    self_cost: f.self_cost,
                    inclusive,
                    calls: f.calls,
                }
            })
            .collect();
        Ok(Profile {
            events: self.events,
            totals,
            functions,
            commands: self.commands,
            files_read: 1,
            parts: self.parts,
        })
    }
}

/// `dst += src` element-wise (growing `dst`), `Err` on overflow.
fn add_into(dst: &mut Vec<u64>, src: &[u64]) -> Result<(), ()> {
    if dst.len() < src.len() {
        dst.resize(src.len(), 0);
    }
    for (d, s) in dst.iter_mut().zip(src) {
        *d = d.checked_add(*s).ok_or(())?;
    }
    Ok(())
}

fn parse_u64(word: &[u8]) -> Option<u64> {
    match word {
        [] => None,
        [b'0', b'x' | b'X', hex @ ..] => {
            if hex.is_empty() {
                return None;
            }
            let mut v: u64 = 0;
            for &b in hex {
                let d = (b as char).to_digit(16)?;
                v = v.checked_mul(16)?.checked_add(u64::from(d))?;
            }
            Some(v)
        }
        // Up to 19 decimal digits cannot overflow: no checks needed.
        _ if word.len() <= 19 => {
            let mut v: u64 = 0;
            for &b in word {
                let d = b.wrapping_sub(b'0');
                if d > 9 {
                    return None;
                }
                v = v * 10 + u64::from(d);
            }
            Some(v)
        }
        _ => {
            let mut v: u64 = 0;
            for &b in word {
                let d = b.wrapping_sub(b'0');
                if d > 9 {
                    return None;
                }
                v = v.checked_mul(10)?.checked_add(u64::from(d))?;
            }
            Some(v)
        }
    }
}

fn words(s: &[u8]) -> impl Iterator<Item = &[u8]> {
    s.split(|b| *b == b' ' || *b == b'\t')
        .filter(|w| !w.is_empty())
}

fn trim_start(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| *b != b' ' && *b != b'\t')
        .unwrap_or(s.len());
    &s[start..]
}

fn trim(s: &[u8]) -> &[u8] {
    let s = trim_start(s);
    let end = s
        .iter()
        .rposition(|b| *b != b' ' && *b != b'\t')
        .map_or(0, |i| i + 1);
    &s[..end]
}

/// A short printable excerpt of a line for messages.
fn snippet(s: &[u8]) -> String {
    let text = String::from_utf8_lossy(&s[..s.len().min(60)]);
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if s.len() > 60 {
        out.push('…');
    }
    out
}
