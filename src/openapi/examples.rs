//! An example of every request and answer body, taken from the test suite's
//! own exchanges rather than written by hand: `examples.json`, keyed by
//! `"<METHOD> <path template>"`, then `request` or the status, then the
//! media type. To record them again (the second command keeps the
//! examples of operations the first did not reach):
//!
//! ```text
//! rm -f target/exchanges.jsonl
//! GATEHOUSE_RECORD_EXAMPLES=$PWD/target/exchanges.jsonl cargo test --test api
//! GATEHOUSE_RECORD_EXAMPLES=$PWD/target/exchanges.jsonl GATEHOUSE_WRITE_DOCS=1 cargo test --lib openapi::examples::tests::docs_
//! ```
use serde_json::Value;

const RECORDED: &str = include_str!("examples.json");

/// Whether a media type object (or a schema) shows an example already.
fn shows_example(media: &Value) -> bool {
    media.get("example").is_some() || media.get("examples").is_some()
}

/// Gives each body its recorded example, where the handler's annotations
/// gave none.
pub fn add(document: &mut Value) {
    let recorded: Value = serde_json::from_str(RECORDED).expect("examples.json is JSON");
    for (path, item) in document["paths"].as_object_mut().expect("paths") {
        for (method, operation) in item.as_object_mut().expect("a path item") {
            let Some(examples) = recorded.get(format!("{} {path}", method.to_uppercase())) else { continue };
            for (part, by_media_type) in examples.as_object().expect("an operation's examples") {
                let body = match part.as_str() {
                    "request" => operation.get_mut("requestBody"),
                    status => operation.get_mut("responses").and_then(|r| r.get_mut(status)),
                };
                let Some(content) = body.and_then(|b| b.get_mut("content")).and_then(Value::as_object_mut) else {
                    continue;
                };
                for (media_type, example) in by_media_type.as_object().expect("examples by media type") {
                    match content.get_mut(media_type) {
                        Some(media) if !shows_example(media) => {
                            media["example"] = example.clone();
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

/// Turns the suite's recorded exchanges (`tests/api/examples.rs`) into
/// `examples.json`.
#[cfg(test)]
mod recording {
    use std::collections::BTreeMap;

    use serde_json::{json, Value};

    /// Where an example goes: the operation's key, `request` or the status,
    /// the media type.
    type Place = (String, String, String);

    /// The examples `recording` holds for the bodies of `document` (as
    /// described, before [`super::add`]) that have none: for each, the
    /// richest body under [`PLENTY`] bytes (or, when none is, the richest).
    pub fn examples_from(document: &Value, recording: &str) -> BTreeMap<Place, Value> {
        let paths = document["paths"].as_object().expect("paths");
        let mut best: BTreeMap<Place, ((bool, usize), Value)> = BTreeMap::new();
        for line in recording.lines() {
            let exchange: Value = serde_json::from_str(line).expect("a recorded exchange");
            let method = exchange["method"].as_str().expect("a method");
            let status = exchange["status"].as_u64().expect("a status");
            let Some(template) = template_of(paths.keys(), exchange["path"].as_str().expect("a path")) else {
                continue;
            };
            let operation = &paths[template][method.to_lowercase()];
            if operation.is_null() {
                continue;
            }
            let key = format!("{method} {template}");
            let mut consider = |part: String, declared: &Value, sent: &Value| {
                let media_type = sent["media_type"].as_str().unwrap_or_default();
                let media = &declared["content"][media_type];
                if media.is_null() || super::shows_example(media) || sent["body"] == json!("") {
                    return;
                }
                let mut body = cleaned(&sent["body"]);
                // A form or a stream of lines the document declares as text.
                if media["schema"]["type"] == "string" && !body.is_string() {
                    body = match (&body, media_type) {
                        (Value::Object(fields), "application/x-www-form-urlencoded") => {
                            let mut form = url::form_urlencoded::Serializer::new(String::new());
                            for (name, value) in fields {
                                form.append_pair(name, value.as_str().unwrap_or_default());
                            }
                            Value::String(form.finish())
                        }
                        _ => Value::String(body.to_string() + "\n"),
                    };
                }
                if body.to_string().len() > HUGE {
                    body = excerpt(&body, 0);
                }
                let score = (body.to_string().len() <= PLENTY, leaves(&body));
                let place = (key.clone(), part, media_type.to_string());
                if best.get(&place).is_none_or(|(kept, _)| score > *kept) {
                    best.insert(place, (score, body));
                }
            };
            // A request is an example only if it was accepted.
            if !exchange["request"].is_null() && status < 400 {
                consider("request".into(), &operation["requestBody"], &exchange["request"]);
            }
            consider(status.to_string(), &operation["responses"][status.to_string()], &exchange["response"]);
        }
        best.into_iter().map(|(place, (_, body))| (place, body)).collect()
    }

    /// Bytes of JSON beyond which an example is more than a reader wants.
    const PLENTY: usize = 4096;

    /// Bytes beyond which a body (this document, the metrics) is shown by
    /// an [`excerpt`].
    const HUGE: usize = 16 * 1024;

    /// The start of a huge body: text to its 20th line; JSON to three
    /// levels, with three fields an object below the top.
    fn excerpt(value: &Value, depth: usize) -> Value {
        match value {
            Value::String(text) => Value::String(text.lines().take(20).collect::<Vec<_>>().join("\n") + "\n"),
            Value::Array(_) if depth >= 3 => Value::Array(Vec::new()),
            Value::Array(items) => Value::Array(items.iter().take(1).map(|v| excerpt(v, depth + 1)).collect()),
            Value::Object(_) if depth >= 3 => json!({}),
            Value::Object(fields) => {
                let kept = if depth == 0 { usize::MAX } else { 3 };
                Value::Object(fields.iter().take(kept).map(|(k, v)| (k.clone(), excerpt(v, depth + 1))).collect())
            }
            other => other.clone(),
        }
    }

    /// The template of `paths` that `path` is: the same segments, a
    /// `{parameter}` standing for any one; the most literal one wins.
    fn template_of<'a>(paths: impl Iterator<Item = &'a String>, path: &str) -> Option<&'a str> {
        let segments: Vec<&str> = path.split('/').collect();
        let literal_matches = |template: &str| {
            let parts: Vec<&str> = template.split('/').collect();
            let mut literal = 0;
            for (part, segment) in parts.iter().zip(&segments) {
                match part.starts_with('{') && part.ends_with('}') {
                    true if !segment.is_empty() => {}
                    true => return None,
                    false if part == segment => literal += 1,
                    false => return None,
                }
            }
            (parts.len() == segments.len()).then_some(literal)
        };
        paths.filter_map(|t| literal_matches(t).map(|n| (n, t.as_str()))).max_by_key(|(n, _)| *n).map(|(_, t)| t)
    }

    /// How many scalars `value` holds: a richer example shows more fields.
    fn leaves(value: &Value) -> usize {
        match value {
            Value::Array(items) => items.iter().map(leaves).sum(),
            Value::Object(fields) => fields.values().map(leaves).sum(),
            _ => 1,
        }
    }

    /// `value` as a reader should see it: lists cut to two items, our
    /// credentials replaced by example ones, the suite's loopback servers
    /// by `https://example.com`, and the suite's own fourth region by `eu`
    /// (a deployment's document names only its own regions).
    fn cleaned(value: &Value) -> Value {
        match value {
            Value::Array(items) => Value::Array(items.iter().take(2).map(cleaned).collect()),
            Value::Object(fields) => Value::Object(fields.iter().map(|(k, v)| (k.clone(), cleaned(v))).collect()),
            Value::String(text) if text == "ca" => json!("eu"),
            Value::String(text) => {
                let text = crate::crypto::key_format::example_of(text).unwrap_or_else(|| text.clone());
                Value::String(without_loopback(&text))
            }
            other => other.clone(),
        }
    }

    /// `text` with each `http://127.0.0.1:<port>` as `https://example.com`.
    fn without_loopback(text: &str) -> String {
        const LOOPBACK: &str = "http://127.0.0.1:";
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(LOOPBACK) {
            out.push_str(&rest[..at]);
            out.push_str("https://example.com");
            rest = rest[at + LOOPBACK.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
        }
        out.push_str(rest);
        out
    }

    #[test]
    fn a_path_is_matched_to_its_most_literal_template() {
        let paths: Vec<String> =
            ["/v1/users/{id}", "/v1/users/me", "/v1/users/{id}/sessions"].map(String::from).to_vec();
        assert_eq!(template_of(paths.iter(), "/v1/users/me"), Some("/v1/users/me"));
        assert_eq!(template_of(paths.iter(), "/v1/users/u1"), Some("/v1/users/{id}"));
        assert_eq!(template_of(paths.iter(), "/v1/users/u1/sessions"), Some("/v1/users/{id}/sessions"));
        assert_eq!(template_of(paths.iter(), "/v1/users//sessions"), None);
        assert_eq!(template_of(paths.iter(), "/v1/other"), None);
    }

    #[test]
    fn a_recorded_body_is_cleaned_for_readers() {
        let body = json!({"items": [1, 2, 3], "url": "http://127.0.0.1:40123/cb?x=1", "region": "ca"});
        assert_eq!(cleaned(&body), json!({"items": [1, 2], "url": "https://example.com/cb?x=1", "region": "eu"}));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    fn document() -> Value {
        serde_json::from_str(super::super::json()).expect("the document is JSON")
    }

    /// Each body the document declares, as (where, its media type object).
    fn bodies(document: &Value) -> Vec<(String, &Value)> {
        let mut bodies = Vec::new();
        for (path, item) in document["paths"].as_object().expect("paths") {
            for (method, operation) in item.as_object().expect("a path item") {
                let here = format!("{} {path}", method.to_uppercase());
                for (media_type, media) in operation["requestBody"]["content"].as_object().into_iter().flatten() {
                    bodies.push((format!("{here} request {media_type}"), media));
                }
                for (status, response) in operation["responses"].as_object().into_iter().flatten() {
                    for (media_type, media) in response["content"].as_object().into_iter().flatten() {
                        bodies.push((format!("{here} {status} {media_type}"), media));
                    }
                }
            }
        }
        bodies
    }

    #[test]
    fn every_body_has_an_example() {
        let document = document();
        let bodies = bodies(&document);
        let has_example = |media: &Value| {
            let schema = match media["schema"]["$ref"].as_str() {
                Some(name) => &document["components"]["schemas"][name.rsplit('/').next().expect("a name")],
                None => &media["schema"],
            };
            super::shows_example(media) || super::shows_example(schema)
        };
        let missing: Vec<&String> = bodies.iter().filter(|(_, m)| !has_example(m)).map(|(w, _)| w).collect();
        assert!(missing.is_empty(), "{} of {} bodies have no example: {missing:#?}", missing.len(), bodies.len());
    }

    /// An example kept for a body the document no longer has is stale.
    #[test]
    fn every_recorded_example_has_its_body_in_the_document() {
        let document = document();
        let recorded: Value = serde_json::from_str(super::RECORDED).expect("examples.json is JSON");
        for (key, parts) in recorded.as_object().expect("examples by operation") {
            let (method, path) = key.split_once(' ').expect("`<METHOD> <path>`");
            let operation = &document["paths"][path][method.to_lowercase()];
            for (part, by_media_type) in parts.as_object().expect("examples by part") {
                let body = if part == "request" { &operation["requestBody"] } else { &operation["responses"][part] };
                for media_type in by_media_type.as_object().expect("examples by media type").keys() {
                    assert!(!body["content"][media_type].is_null(), "{key} {part} {media_type}");
                }
            }
        }
    }

    /// With `GATEHOUSE_RECORD_EXAMPLES` (see the module's documentation):
    /// `examples.json` is the recording's examples over the ones kept.
    #[test]
    fn docs_examples_json_is_recorded_from_the_suite() {
        let Some(recording) = std::env::var_os("GATEHOUSE_RECORD_EXAMPLES") else { return };
        let recording = std::fs::read_to_string(recording).expect("the recording is readable");
        let mut examples: Value = serde_json::from_str(super::RECORDED).expect("examples.json is JSON");
        let described = super::super::described();
        for ((key, part, media_type), body) in super::recording::examples_from(&described, &recording) {
            let by_part = examples.as_object_mut().expect("an object").entry(key).or_insert_with(|| json!({}));
            let by_media_type = by_part.as_object_mut().expect("an object").entry(part).or_insert_with(|| json!({}));
            by_media_type[media_type] = body;
        }
        let written = serde_json::to_string_pretty(&examples).expect("examples serialise") + "\n";
        crate::generated_docs::assert_generated("src/openapi/examples.json", &written);
    }
}
