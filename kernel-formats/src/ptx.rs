//! The entry declarations of PTX text (`.visible .entry name(...)`), as the device build (which
//! reads their parameters and adds register limits) and the runtime (which looks entries up)
//! both read them.

/// The first `.entry` directive in `text`: the entry's name and the text after it (its
/// parameter list first). `None` when there is none. The name ends at `(` or whitespace.
///
/// ```
/// use kernel_formats::ptx::next_entry;
/// let ptx = ".visible .entry a__c0(\n\t.param .u64 p\n)\n{\n}\n.entry b()\n{\n}\n";
/// let (a, rest) = next_entry(ptx).unwrap();
/// assert_eq!((a, &rest[..1]), ("a__c0", "("));
/// assert_eq!(next_entry(rest).unwrap().0, "b");
/// assert!(next_entry("ret;").is_none());
/// ```
pub fn next_entry(text: &str) -> Option<(&str, &str)> {
    let mut rest = text;
    loop {
        let at = rest.find(".entry ")?;
        rest = &rest[at + ".entry ".len()..];
        let trimmed = rest.trim_start();
        let len = trimmed.find(|c: char| c == '(' || c.is_whitespace()).unwrap_or(trimmed.len());
        if len > 0 {
            return Some((&trimmed[..len], &trimmed[len..]));
        }
    }
}

/// The names of every entry `text` declares, in order.
///
/// ```
/// use kernel_formats::ptx::entry_names;
/// let ptx = ".visible .entry a(\n)\n{\n}\n.func f()\n{\n}\n.visible .entry b()\n{\n}\n";
/// assert_eq!(entry_names(ptx).collect::<Vec<_>>(), ["a", "b"]);
/// ```
pub fn entry_names(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let (name, after) = next_entry(rest)?;
        rest = after;
        Some(name)
    })
}
