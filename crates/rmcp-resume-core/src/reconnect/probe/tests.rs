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
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

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
