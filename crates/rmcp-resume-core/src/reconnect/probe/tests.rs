use proptest::prelude::*;

use super::*;

fn frame(data: &str) -> Sse {
    Sse {
        event: None,
        data: Some(data.to_owned()),
        id: None,
        retry: None,
    }
}

/// The reference: the message built as a struct of the two keys, the whole
/// text read (the probe this one replaced, less its acceptance of arrays).
fn reference(data: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(default)]
        id: Option<IgnoredAny>,
        #[serde(default)]
        method: Option<IgnoredAny>,
    }
    data.trim_start().starts_with('{')
        && serde_json::from_str::<Probe>(data).is_ok_and(|p| p.id.is_some() && p.method.is_none())
}

#[test]
fn the_messages_rmcp_sends() {
    let cases = [
        (r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#, true),
        (
            r#"{"jsonrpc":"2.0","id":"a","error":{"code":-32000,"message":"x"}}"#,
            true,
        ),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#,
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{}}"#,
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}"#,
            false,
        ),
        (r#"{"id":1,"method":null}"#, true),
        (r#"{"id":1,"id":2}"#, false),
        (r#"{"id":1,"result":{}"#, false),
        (r#"{"id":1} trailing"#, false),
        (r#"[{"id":1,"result":{}}]"#, false),
        (r#"{"\u0069d":1}"#, true),
        ("", false),
        ("not json", false),
    ];
    for (data, expected) in cases {
        assert_eq!(is_response(&frame(data)), expected, "{data}");
        assert_eq!(reference(data), expected, "reference: {data}");
    }
    assert!(!is_response(&Sse::default()));
}

/// A JSON value, up to a small depth.
fn value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        "[a-z\"\\\\ ]{0,6}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            proptest::collection::vec(("[a-z]{1,3}", inner), 0..4)
                .prop_map(|kv| serde_json::Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// An object's text with keys drawn so that `id` and `method` come, repeat
/// and are null often; written by hand so that repeats survive.
fn object() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("id"),
        Just("method"),
        Just("\\u0069d"),
        Just("\\u006dethod"),
        Just("jsonrpc"),
        Just("result"),
        Just("error"),
        Just("params"),
        Just("x"),
    ];
    let tail = prop_oneof![Just(""), Just(" "), Just("\n"), Just(" x")];
    (proptest::collection::vec((key, value()), 0..6), tail).prop_map(|(entries, tail)| {
        let body: Vec<String> = entries
            .iter()
            .map(|(k, v)| format!("\"{k}\" : {v}"))
            .collect();
        format!(" {{{}}}{tail}", body.join(" ,"))
    })
}

proptest! {
    #![proptest_config(crate::proptest_config::fixed(2048, 0x2026_0109))]

    /// The early stop changes no answer: on whole objects (with whitespace,
    /// escaped keys, trailing text) and on a random prefix of each (a frame
    /// cut short; with trailing whitespace, some prefixes are whole).
    #[test]
    fn answers_as_the_whole_read_does(text in object(), cut in any::<prop::sample::Index>()) {
        prop_assert_eq!(is_response(&frame(&text)), reference(&text), "{}", text);
        let mut at = cut.index(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let prefix = &text[..at];
        prop_assert_eq!(is_response(&frame(prefix)), reference(prefix), "{}", prefix);
    }
}

/// Text near JSON: an object's text with a few bytes replaced, inserted or
/// removed, drawn from the characters JSON's grammar turns on.
fn mutated() -> impl Strategy<Value = String> {
    let alphabet = vec![
        '{', '}', '[', ']', '"', ',', ':', '\\', '/', '0', '1', '9', '.', 'e', 'E', '+', '-', 't',
        'r', 'n', 'u', 'l', 'f', 'a', 'b', ' ', '\n', '\t', '\u{1}', '\u{1f}', 'x', 'é',
    ];
    let edit = (
        any::<prop::sample::Index>(),
        0..3u8,
        prop::sample::select(alphabet),
    );
    (object(), proptest::collection::vec(edit, 0..4)).prop_map(|(text, edits)| {
        let mut chars: Vec<char> = text.chars().collect();
        for (at, kind, c) in edits {
            let at = at.index(chars.len() + 1);
            match kind {
                0 if at < chars.len() => chars[at] = c,
                1 => chars.insert(at, c),
                _ if at < chars.len() => {
                    chars.remove(at);
                }
                _ => chars.push(c),
            }
        }
        chars.into_iter().collect()
    })
}

#[test]
fn the_byte_scan_reads_the_grammar_as_serde_json_does() {
    let cases = [
        (r#"{"id":1,"result":{"n":-0.5e+3}}"#, Some(true)),
        (r#"{"id":1,"result":01}"#, Some(false)),
        (r#"{"id":1,"result":1.}"#, Some(false)),
        (r#"{"id":1,"result":1e}"#, Some(false)),
        (r#"{"id":1,"result":-}"#, Some(false)),
        (r#"{"id":1,"result":"\u00e9\n\/"}"#, Some(true)),
        (r#"{"id":1,"result":"\u00g9"}"#, Some(false)),
        (r#"{"id":1,"result":"\x"}"#, Some(false)),
        ("{\"id\":1,\"result\":\"a\u{1}\"}", Some(false)),
        (r#"{"id":1,"result":[1,]}"#, Some(false)),
        (r#"{"id":1,"result":{"a":1,}}"#, Some(false)),
        (r#"{"id":1,"result":{1:2}}"#, Some(false)),
        (r#"{"id":1,"result":{"a":1]}"#, Some(false)),
        (r#"{"id":1,"result":[1}}"#, Some(false)),
        (r#"{"id":1,"result":[[1],{"a":[2}]}"#, Some(false)),
        (
            r#"{"id":1,"result":[{},[],{"a":[{"b":null}]}]}"#,
            Some(true),
        ),
        (r#"{"id":1,"result":nul}"#, Some(false)),
        (r#"{"id":1,}"#, Some(false)),
        (r#"{"id":nullx}"#, Some(false)),
        (" {\"id\" :\t1 }\r\n", Some(true)),
        (r#"{"method":"x","id":1} trailing"#, Some(false)),
        // Left to serde_json: a top-level key with an escape.
        (r#"{"\u0069d":1}"#, None),
        (r#"{"id":1,"\u0069d":2}"#, None),
    ];
    for (data, expected) in cases {
        assert_eq!(bytes::verdict(data.as_bytes()), expected, "{data}");
        if let Some(answer) = expected {
            assert_eq!(scanned(data), answer, "serde_json: {data}");
        }
    }
}

#[test]
fn nesting_past_the_byte_scans_depth_goes_to_serde_json() {
    // An empty container opens no level: 65 brackets, the innermost empty,
    // hold 64 open.
    for (depth, fast) in [(65, true), (66, false), (500, false)] {
        let data = format!(
            r#"{{"id":1,"result":{}{}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        assert_eq!(
            bytes::verdict(data.as_bytes()).is_some(),
            fast,
            "depth {depth}"
        );
        assert!(is_response(&frame(&data)), "depth {depth}");
        let cut = &data[..data.len() - 2];
        assert!(!is_response(&frame(cut)), "depth {depth}, cut short");
    }
}

proptest! {
    #![proptest_config(crate::proptest_config::fixed(4096, 0x2026_0216))]

    /// The byte scan answers as the `serde_json` scan does wherever it
    /// answers, and answers every object whose top-level keys have no
    /// escape; on text near JSON, the probe answers as the reference does.
    #[test]
    fn the_byte_scan_answers_as_serde_json_does(text in object(), near in mutated()) {
        let fast = bytes::verdict(text.as_bytes());
        prop_assert!(fast.is_some() || text.contains("\\u00"), "left to serde_json: {}", text);
        prop_assert!(fast.is_none_or(|answer| answer == scanned(&text)), "{}", text);
        prop_assert!(
            bytes::verdict(near.as_bytes()).is_none_or(|answer| answer == scanned(&near)),
            "{}",
            near
        );
        prop_assert_eq!(is_response(&frame(&near)), reference(&near), "{}", near);
    }
}

/// A repeated `method`, even a null one each time, is no response (as
/// `serde_json` reads a struct with a repeated field): by the byte scan,
/// and by the `serde_json` scan where a key's escape leaves it the frame.
#[test]
fn a_repeated_null_method_is_not_a_response() {
    for data in [
        r#"{"id":1,"method":null,"method":null}"#,
        r#"{"method":null,"id":1,"method":null,"result":{}}"#,
        r#"{"id":1,"method":null,"\u006dethod":null}"#,
    ] {
        assert!(!is_response(&frame(data)), "{data}");
        assert!(!reference(data), "reference: {data}");
        assert!(!scanned(data), "serde_json: {data}");
    }
    assert_eq!(
        bytes::verdict(br#"{"id":1,"method":null,"method":null}"#),
        Some(false)
    );
}
