//! Register limits per entry: an entry whose instance description (`#[kernel]`'s metadata in
//! the PTX) gives `maxnreg` gets the PTX directive `.maxnreg N` after its parameter list, which
//! ptxas honours (spilling if it must: the build reports spills as always). Triton's
//! `maxnreg` config option does the same; a config uses it to keep an occupancy step, e.g. two
//! blocks of 256 threads per SM at 128 registers.

/// `ptx` with `.maxnreg N` after the parameter list of each entry named in `limits` (entry
/// name, `N`); entries not named are unchanged. An entry that already has a `.maxnreg` keeps it.
pub fn limit_registers(ptx: &str, limits: &[(String, u32)]) -> String {
    if limits.is_empty() {
        return ptx.to_string();
    }
    let mut out = String::with_capacity(ptx.len() + 32 * limits.len());
    let mut pending: Option<u32> = None;
    let mut lines = ptx.lines().peekable();
    while let Some(line) = lines.next() {
        out.push_str(line);
        out.push('\n');
        if let Some((name, _)) = kernel_formats::ptx::next_entry(line) {
            pending = limits.iter().find(|(n, _)| n == name).map(|(_, r)| *r);
        }
        // The parameter list closes on the entry's line (no parameters) or on a line of its own
        // (parameter lines hold no parenthesis).
        if let Some(n) = pending.filter(|_| line.contains(')')) {
            pending = None;
            if !lines.peek().is_some_and(|l| l.trim_start().starts_with(".maxnreg")) {
                out.push_str(&format!(".maxnreg {n}\n"));
            }
        }
    }
    if !ptx.ends_with('\n') {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "//\n.version 8.5\n.visible .entry a__c0(\n\t.param .u64 a__c0_param_0,\n\t.param .u32 a__c0_param_1\n)                                       // @a__c0\n{\n\tret;\n}\n.visible .entry b__c0()\n{\n\tret;\n}\n.func f(\n\t.param .b32 x\n)\n{\n\tret;\n}\n";

    #[test]
    fn named_entries_get_the_directive_after_their_parameters() {
        let out = limit_registers(PTX, &[("a__c0".into(), 128), ("b__c0".into(), 96)]);
        assert!(out.contains("// @a__c0\n.maxnreg 128\n{"), "{out}");
        assert!(out.contains(".visible .entry b__c0()\n.maxnreg 96\n{"), "{out}");
        // Nothing else moves, and a function's parameter list is not an entry's.
        assert_eq!(out.replace(".maxnreg 128\n", "").replace(".maxnreg 96\n", ""), PTX);
        assert_eq!(out.matches(".maxnreg").count(), 2);
    }

    #[test]
    fn other_entries_and_no_limits_leave_the_text_alone() {
        assert_eq!(limit_registers(PTX, &[]), PTX);
        assert_eq!(limit_registers(PTX, &[("c__c0".into(), 64)]), PTX);
        let once = limit_registers(PTX, &[("a__c0".into(), 128)]);
        assert_eq!(limit_registers(&once, &[("a__c0".into(), 128)]), once, "a second pass adds nothing");
    }
}
