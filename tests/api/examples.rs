//! The suite's exchanges as the OpenAPI document's examples. With
//! `GATEHOUSE_RECORD_EXAMPLES=<file>`, every request sent through [`send`]
//! (which [`TestApp`](crate::helpers::TestApp) and the tests' browsers use)
//! and its answer are appended to `<file>`, one JSON object a line;
//! `src/openapi/examples.rs` picks each body's example from them.
use std::{io::Write, sync::Mutex};

use reqwest::ResponseBuilderExt;
use serde_json::{json, Value};

/// Sends `request`, recording it and its answer when the suite records.
pub async fn send(request: reqwest::RequestBuilder) -> reqwest::Response {
    let (client, request) = request.build_split();
    let request = request.expect("a well-formed request");
    if std::env::var_os("GATEHOUSE_RECORD_EXAMPLES").is_none() {
        return client.execute(request).await.expect("request sent");
    }
    let mut exchange = json!({"method": request.method().as_str(), "path": request.url().path()});
    if let Some(bytes) = request.body().and_then(|body| body.as_bytes()) {
        let media_type = media_type(request.headers());
        exchange["request"] = json!({"body": parsed(&media_type, bytes), "media_type": media_type});
    }
    let response = client.execute(request).await.expect("request sent");
    let (status, headers, url) = (response.status(), response.headers().clone(), response.url().clone());
    let bytes = response.bytes().await.unwrap_or_default();
    let media_type = media_type(&headers);
    exchange["status"] = json!(status.as_u16());
    exchange["response"] = json!({"body": parsed(&media_type, &bytes), "media_type": media_type});
    append(&exchange);
    // The same answer again, its URL too (a relative `Location` resolves against it).
    let mut rebuilt = http::Response::builder().status(status).url(url).body(bytes).expect("the answer rebuilt");
    *rebuilt.headers_mut() = headers;
    reqwest::Response::from(rebuilt)
}

fn append(exchange: &Value) {
    static RECORDING: Mutex<Option<std::fs::File>> = Mutex::new(None);
    let mut recording = RECORDING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let file = recording.get_or_insert_with(|| {
        let path = std::env::var_os("GATEHOUSE_RECORD_EXAMPLES").expect("recording");
        std::fs::OpenOptions::new().create(true).append(true).open(path).expect("the recording opens")
    });
    writeln!(file, "{exchange}").expect("the recording is written");
}

fn media_type(headers: &reqwest::header::HeaderMap) -> String {
    let value = headers.get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    value.split(';').next().unwrap_or_default().trim().to_string()
}

/// A JSON body as its value, a form as an object of its fields, anything
/// else as text.
fn parsed(media_type: &str, bytes: &[u8]) -> Value {
    if media_type == "application/x-www-form-urlencoded" {
        let fields = url::form_urlencoded::parse(bytes).map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())));
        return Value::Object(fields.collect());
    }
    let text = String::from_utf8_lossy(bytes);
    if media_type.ends_with("json") {
        if let Ok(value) = serde_json::from_str(&text) {
            return value;
        }
    }
    Value::String(text.into_owned())
}
