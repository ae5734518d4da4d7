//! The SCIM protocol under a directory's base URL
//! (`/v1/applications/{application_id}/scim/v2/{directory_id}`): discovery
//! (`/ServiceProviderConfig`, `/ResourceTypes`, `/Schemas`), then `/Users`
//! and `/Groups` with list and filter, create, get, replace (PUT), PATCH and
//! delete, each answering `application/scim+json` with an ETag. Every
//! request carries the directory's bearer token; any refusal is a SCIM
//! error (RFC 7644 section 3.12), never the envelope.
use actix_web::{
    http::{header, StatusCode},
    web, HttpRequest, HttpResponse,
};
use serde_json::{json, Map, Value};
use utoipa::{IntoParams, ToSchema};

use super::{directories::protocol_base_url, SCIM_JSON};
use crate::{
    area::{ApplicationFrom, ApplicationIn, Area},
    areas::{
        scim::{
            self,
            filter::{AttrPath, Filter},
            patch::PatchRequest,
            resources::{self, Change, Directory, Window},
            schema::{self, Kind},
            ScimError,
        },
        sod::Policies,
    },
    audit::Actor,
    auth::{public::tenant_in_path, public_scope, secret_key::bearer_token},
    http::{body::Body, path_id},
    openapi::security,
    state::AppState,
    storage::TenantScope,
};

pub const AREA: Area = Area {
    segments: &["applications"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(
    service_provider_config,
    resource_types,
    resource_type,
    schemas,
    schema_by_id,
    scim_list_users,
    scim_create_user,
    scim_find_user,
    scim_replace_user,
    scim_patch_user,
    scim_delete_user,
    scim_list_groups,
    scim_create_group,
    scim_find_group,
    scim_replace_group,
    scim_patch_group,
    scim_delete_group
))]
struct Operations;

const BASE: &str = "/v1/applications/{application_id}/scim/v2/{directory_id}";
const ANY_ROUTE: &str = "/v1/applications/{application_id}/scim/v2/{directory_id}/{rest:.*}";

pub const APPLICATION_IN: &[ApplicationIn] = &[ApplicationIn { route: ANY_ROUTE, from: ApplicationFrom::Path }];

/// The most resources one list answers.
pub const MAX_RESULTS: u64 = 1000;
const DEFAULT_COUNT: u64 = 100;

pub fn configure(cfg: &mut web::ServiceConfig) {
    let at = |rest: &str| format!("{}{rest}", &BASE["/v1".len()..]);
    cfg.service(web::resource(at("/ServiceProviderConfig")).route(web::get().to(service_provider_config)))
        .service(web::resource(at("/ResourceTypes")).route(web::get().to(resource_types)))
        .service(web::resource(at("/ResourceTypes/{name}")).route(web::get().to(resource_type)))
        .service(web::resource(at("/Schemas")).route(web::get().to(schemas)))
        .service(web::resource(at("/Schemas/{schema_id}")).route(web::get().to(schema_by_id)))
        .service(
            web::resource(at("/Users")).route(web::get().to(scim_list_users)).route(web::post().to(scim_create_user)),
        )
        .service(
            web::resource(at("/Users/{resource_id}"))
                .route(web::get().to(scim_find_user))
                .route(web::put().to(scim_replace_user))
                .route(web::patch().to(scim_patch_user))
                .route(web::delete().to(scim_delete_user)),
        )
        .service(
            web::resource(at("/Groups"))
                .route(web::get().to(scim_list_groups))
                .route(web::post().to(scim_create_group)),
        )
        .service(
            web::resource(at("/Groups/{resource_id}"))
                .route(web::get().to(scim_find_group))
                .route(web::put().to(scim_replace_group))
                .route(web::patch().to(scim_patch_group))
                .route(web::delete().to(scim_delete_group)),
        )
        .service(web::resource(&ANY_ROUTE["/v1".len()..]).to(unknown));
}

/// A directory's request, authenticated: the application acting as the
/// directory, and the directory.
struct Caller {
    scope: TenantScope,
    directory: Directory,
}

type Base = web::Path<(String, String)>;
type One = web::Path<(String, String, String)>;

/// The directory whose token the request carries. The operation must
/// declare the `scim_token` scheme; anything else is 401.
async fn caller(state: &AppState, req: &HttpRequest, application: &str, directory: &str) -> Result<Caller, ScimError> {
    if !security::of_request(req).is_some_and(|d| d.accepts(security::SCIM_TOKEN)) {
        return Err(ScimError::unauthorized());
    }
    let tenant = tenant_in_path(state, req, application).await.map_err(ScimError::from)?;
    let application_id = tenant.id;
    let scope = public_scope(state, tenant).ok_or_else(|| ScimError::not_found("Application", application))?;
    let directory_id = path_id("SCIM directory", directory).map_err(|_| ScimError::unauthorized())?;
    let token = bearer_token(req).ok_or_else(ScimError::unauthorized)?;
    let row = scim::authenticate(&scope, directory_id, token).await?.ok_or_else(ScimError::unauthorized)?;
    let base_url = protocol_base_url(state, application_id, directory_id);
    Ok(Caller { scope: scope.acting_as(Actor::scim_directory(directory_id)), directory: Directory { row, base_url } })
}

async fn policies(state: &AppState, scope: &TenantScope) -> Result<std::sync::Arc<Policies>, ScimError> {
    Ok(state.tenants.state(scope).await?.part::<Policies>())
}

fn answer(status: StatusCode, body: &Value) -> HttpResponse {
    HttpResponse::build(status).content_type(SCIM_JSON).body(body.to_string())
}

/// One resource, with its ETag (and `Location` when it was just made).
fn resource_answer(status: StatusCode, row: &entity::scim_resource::Model, base_url: &str) -> HttpResponse {
    let body = resources::render(row, base_url);
    let mut answer = HttpResponse::build(status);
    answer.content_type(SCIM_JSON).insert_header((header::ETAG, resources::etag(row)));
    if status == StatusCode::CREATED {
        if let Some(location) = body["meta"]["location"].as_str() {
            answer.insert_header((header::LOCATION, location.to_string()));
        }
    }
    answer.body(body.to_string())
}

fn list_answer(resources: Vec<Value>, total: u64, start_index: u64) -> HttpResponse {
    let body = json!({
        "schemas": [schema::LIST_RESPONSE],
        "totalResults": total,
        "startIndex": start_index,
        "itemsPerPage": resources.len(),
        "Resources": resources,
    });
    answer(StatusCode::OK, &body)
}

fn header_value(req: &HttpRequest, name: header::HeaderName) -> Option<&str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

/// What a list or a get may say of which attributes to answer.
#[derive(Default, serde::Deserialize, IntoParams)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
#[serde(rename_all = "camelCase")]
pub struct ScimQuery {
    /// A SCIM filter (RFC 7644 section 3.4.2.2), such as `userName eq "ada@example.com"`.
    #[param(max_length = 4096)]
    filter: Option<String>,
    /// The 1-based index of the first result; default 1.
    start_index: Option<String>,
    /// How many results at most, up to 1000; default 100.
    count: Option<String>,
    /// Only these attributes (comma-separated), with `id` and `schemas`.
    attributes: Option<String>,
    /// Every attribute but these (comma-separated).
    excluded_attributes: Option<String>,
}

/// The query as read, refused with a SCIM error (not the envelope).
fn query(req: &HttpRequest) -> Result<ScimQuery, ScimError> {
    web::Query::<ScimQuery>::from_query(req.query_string())
        .map(web::Query::into_inner)
        .map_err(|e| ScimError::invalid_value(format!("the query: {e}")))
}

fn number(raw: Option<&str>, name: &str, default: u64) -> Result<u64, ScimError> {
    match raw {
        None => Ok(default),
        // RFC 7644 section 3.4.2.4: below 1 is read as 1 (startIndex), a negative count as 0.
        Some(raw) => match raw.trim().parse::<i64>() {
            Ok(n) => Ok(n.max(0) as u64),
            Err(_) => Err(ScimError::invalid_value(format!("`{name}` must be an integer"))),
        },
    }
}

fn names(raw: Option<&str>) -> Result<Vec<AttrPath>, ScimError> {
    raw.into_iter()
        .flat_map(|list| list.split(','))
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(AttrPath::parse)
        .collect()
}

/// `attributes` and `excludedAttributes` applied to an answered resource:
/// `id` and `schemas` are always answered.
fn project(mut resource: Value, query: &ScimQuery) -> Result<Value, ScimError> {
    let only = names(query.attributes.as_deref())?;
    let excluded = names(query.excluded_attributes.as_deref())?;
    let Some(fields) = resource.as_object_mut() else { return Ok(resource) };
    let always = |name: &str| name == "id" || name == "schemas";
    if !only.is_empty() {
        let mut kept = Map::new();
        for (name, value) in fields.iter() {
            if always(name) {
                kept.insert(name.clone(), value.clone());
                continue;
            }
            let wanted: Vec<&AttrPath> = only.iter().filter(|p| p.attribute.eq_ignore_ascii_case(name)).collect();
            if wanted.iter().any(|p| p.sub.is_none()) {
                kept.insert(name.clone(), value.clone());
            } else if !wanted.is_empty() {
                kept.insert(name.clone(), only_subs(value, &wanted));
            }
        }
        *fields = kept;
    }
    for path in excluded.iter().filter(|p| !always(&p.attribute)) {
        let Some(name) = fields.keys().find(|k| k.eq_ignore_ascii_case(&path.attribute)).cloned() else { continue };
        match &path.sub {
            None => {
                fields.remove(&name);
            }
            Some(sub) => strip_sub(fields.get_mut(&name), sub),
        }
    }
    Ok(resource)
}

fn only_subs(value: &Value, wanted: &[&AttrPath]) -> Value {
    let keep = |item: &Value| -> Value {
        let Some(object) = item.as_object() else { return item.clone() };
        let kept = object
            .iter()
            .filter(|(k, _)| wanted.iter().any(|p| p.sub.as_deref().is_some_and(|s| s.eq_ignore_ascii_case(k))));
        Value::Object(kept.map(|(k, v)| (k.clone(), v.clone())).collect())
    };
    match value {
        Value::Array(items) => Value::Array(items.iter().map(keep).collect()),
        other => keep(other),
    }
}

fn strip_sub(value: Option<&mut Value>, sub: &str) {
    let strip = |item: &mut Value| {
        if let Some(object) = item.as_object_mut() {
            object.retain(|k, _| !k.eq_ignore_ascii_case(sub));
        }
    };
    match value {
        Some(Value::Array(items)) => items.iter_mut().for_each(strip),
        Some(other) => strip(other),
        None => {}
    }
}

/// The body as a JSON object.
async fn object(body: Body) -> Result<Map<String, Value>, ScimError> {
    let bytes = body.scim_json().await?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(fields)) => Ok(fields),
        Ok(_) => Err(ScimError::invalid_syntax("the body must be a JSON object")),
        Err(e) => Err(ScimError::invalid_syntax(format!("the body is not JSON: {e}"))),
    }
}

async fn list(state: &AppState, req: &HttpRequest, path: &Base, kind: Kind) -> Result<HttpResponse, ScimError> {
    let caller = caller(state, req, &path.0, &path.1).await?;
    let query = query(req)?;
    let filter = query.filter.as_deref().map(Filter::parse).transpose()?;
    let start_index = number(query.start_index.as_deref(), "startIndex", 1)?.max(1);
    let count = number(query.count.as_deref(), "count", DEFAULT_COUNT)?.min(MAX_RESULTS);
    let window = Window { start_index, count };
    let (total, rows) = resources::list(&caller.scope, &caller.directory, kind, filter.as_ref(), window).await?;
    let answered = rows
        .iter()
        .map(|row| project(resources::render(row, &caller.directory.base_url), &query))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(list_answer(answered, total, start_index))
}

async fn create(
    state: &AppState,
    req: &HttpRequest,
    path: &Base,
    kind: Kind,
    body: Body,
) -> Result<HttpResponse, ScimError> {
    let caller = caller(state, req, &path.0, &path.1).await?;
    let sent = object(body).await?;
    let policies = policies(state, &caller.scope).await?;
    let row = resources::create(&caller.scope, &caller.directory, &policies, kind, &sent).await?;
    Ok(resource_answer(StatusCode::CREATED, &row, &caller.directory.base_url))
}

async fn find(state: &AppState, req: &HttpRequest, path: &One, kind: Kind) -> Result<HttpResponse, ScimError> {
    let caller = caller(state, req, &path.0, &path.1).await?;
    let query = query(req)?;
    let row = resources::find(&caller.scope, caller.directory.row.id, kind, &path.2).await?;
    if header_value(req, header::IF_NONE_MATCH)
        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == resources::etag(&row)))
    {
        return Ok(HttpResponse::NotModified().insert_header((header::ETAG, resources::etag(&row))).finish());
    }
    let body = project(resources::render(&row, &caller.directory.base_url), &query)?;
    Ok(HttpResponse::Ok()
        .content_type(SCIM_JSON)
        .insert_header((header::ETAG, resources::etag(&row)))
        .body(body.to_string()))
}

async fn change(
    state: &AppState,
    req: &HttpRequest,
    path: &One,
    kind: Kind,
    body: Body,
    patching: bool,
) -> Result<HttpResponse, ScimError> {
    let caller = caller(state, req, &path.0, &path.1).await?;
    let policies = policies(state, &caller.scope).await?;
    let if_match = header_value(req, header::IF_MATCH);
    let (request, sent);
    let change = if patching {
        request = PatchRequest::parse(&body.scim_json().await?)?;
        Change::Patch(&request)
    } else {
        sent = object(body).await?;
        Change::Replace(&sent)
    };
    let row = resources::change(&caller.scope, &caller.directory, &policies, kind, &path.2, change, if_match).await?;
    Ok(resource_answer(StatusCode::OK, &row, &caller.directory.base_url))
}

async fn delete(state: &AppState, req: &HttpRequest, path: &One, kind: Kind) -> Result<HttpResponse, ScimError> {
    let caller = caller(state, req, &path.0, &path.1).await?;
    let policies = policies(state, &caller.scope).await?;
    let if_match = header_value(req, header::IF_MATCH);
    resources::delete(&caller.scope, &caller.directory, &policies, kind, &path.2, if_match).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// A path under the base URL that names nothing: 404 (501 for a search
/// across resource types, which is not offered), as a SCIM error.
async fn unknown(req: HttpRequest) -> HttpResponse {
    use actix_web::ResponseError;
    let refusal = if req.method() == actix_web::http::Method::POST && req.path().ends_with("/.search") {
        let detail = "Searching across resource types is not offered; filter /Users or /Groups.";
        ScimError { status: 501, scim_type: None, detail: detail.into() }
    } else {
        ScimError::not_found("Endpoint", req.path())
    };
    refusal.error_response()
}

macro_rules! scim_operations {
    ($kind:expr, $segment:literal, $name:literal,
     $list:ident, $create:ident, $find:ident, $replace:ident, $patch:ident, $delete:ident) => {
        #[utoipa::path(get, path = concat!("/v1/applications/{application_id}/scim/v2/{directory_id}/", $segment), tag = "scim",
            summary = concat!("List or filter the directory's ", $segment, ", `startIndex` and `count` paging them."),
            extensions(("x-gatehouse-caller" = json!("scim_client"))),
            params(("application_id" = uuid::Uuid, Path, description = "The application's id."),
                ("directory_id" = uuid::Uuid, Path, description = "The directory's id."), ScimQuery),
            responses((status = 200, description = "A ListResponse", content_type = "application/scim+json", body = ScimResourceView),
                (status = 400, description = "invalidFilter or invalidValue", content_type = "application/scim+json", body = ScimErrorView),
                (status = 401, description = "The bearer token is missing or not the directory's", content_type = "application/scim+json", body = ScimErrorView),
                (status = 404, description = "No such application", content_type = "application/scim+json", body = ScimErrorView)),
            security(("scim_token" = [])))]
        pub async fn $list(state: web::Data<AppState>, req: HttpRequest, path: Base) -> Result<HttpResponse, ScimError> {
            list(&state, &req, &path, $kind).await
        }

        #[utoipa::path(post, path = concat!("/v1/applications/{application_id}/scim/v2/{directory_id}/", $segment), tag = "scim",
            summary = concat!("Provision a ", $name, "."),
            extensions(("x-gatehouse-caller" = json!("scim_client"))),
            params(("application_id" = uuid::Uuid, Path, description = "The application's id."),
                ("directory_id" = uuid::Uuid, Path, description = "The directory's id.")),
            request_body(content = ScimResourceView, content_type = "application/scim+json"),
            responses((status = 201, description = "The resource as stored, with its ETag", content_type = "application/scim+json", body = ScimResourceView),
                (status = 400, description = "invalidSyntax or invalidValue", content_type = "application/scim+json", body = ScimErrorView),
                (status = 401, description = "The bearer token is missing or not the directory's", content_type = "application/scim+json", body = ScimErrorView),
                (status = 404, description = "No such application", content_type = "application/scim+json", body = ScimErrorView),
                (status = 413, description = "The body is over 1 MiB", content_type = "application/scim+json", body = ScimErrorView),
                (status = 415, description = "The body is neither application/scim+json nor application/json", content_type = "application/scim+json", body = ScimErrorView),
                (status = 409, description = "uniqueness: the name is taken, or the email is an account the organization may not take over", content_type = "application/scim+json", body = ScimErrorView)),
            security(("scim_token" = [])))]
        pub async fn $create(state: web::Data<AppState>, req: HttpRequest, path: Base, body: Body) -> Result<HttpResponse, ScimError> {
            create(&state, &req, &path, $kind, body).await
        }

        #[utoipa::path(get, path = concat!("/v1/applications/{application_id}/scim/v2/{directory_id}/", $segment, "/{resource_id}"), tag = "scim",
            summary = concat!("Get a ", $name, " (`If-None-Match` answers 304 when it has not changed)."),
            extensions(("x-gatehouse-caller" = json!("scim_client"))),
            params(("application_id" = uuid::Uuid, Path, description = "The application's id."),
                ("directory_id" = uuid::Uuid, Path, description = "The directory's id."),
                ("resource_id" = String, Path, description = "The resource's id."), ScimQuery),
            responses((status = 200, description = "The resource, with its ETag", content_type = "application/scim+json", body = ScimResourceView),
                (status = 304, description = "Not changed since the ETag given"),
                (status = 401, description = "The bearer token is missing or not the directory's", content_type = "application/scim+json", body = ScimErrorView),
                (status = 404, description = "No such resource", content_type = "application/scim+json", body = ScimErrorView)),
            security(("scim_token" = [])))]
        pub async fn $find(state: web::Data<AppState>, req: HttpRequest, path: One) -> Result<HttpResponse, ScimError> {
            find(&state, &req, &path, $kind).await
        }

        #[utoipa::path(put, path = concat!("/v1/applications/{application_id}/scim/v2/{directory_id}/", $segment, "/{resource_id}"), tag = "scim",
            summary = concat!("Replace a ", $name, " (PUT); `If-Match` makes it conditional."),
            extensions(("x-gatehouse-caller" = json!("scim_client"))),
            params(("application_id" = uuid::Uuid, Path, description = "The application's id."),
                ("directory_id" = uuid::Uuid, Path, description = "The directory's id."),
                ("resource_id" = String, Path, description = "The resource's id.")),
            request_body(content = ScimResourceView, content_type = "application/scim+json"),
            responses((status = 200, description = "The resource as stored", content_type = "application/scim+json", body = ScimResourceView),
                (status = 400, description = "invalidSyntax or invalidValue", content_type = "application/scim+json", body = ScimErrorView),
                (status = 401, description = "The bearer token is missing or not the directory's", content_type = "application/scim+json", body = ScimErrorView),
                (status = 404, description = "No such resource", content_type = "application/scim+json", body = ScimErrorView),
                (status = 409, description = "uniqueness", content_type = "application/scim+json", body = ScimErrorView),
                (status = 413, description = "The body is over 1 MiB", content_type = "application/scim+json", body = ScimErrorView),
                (status = 415, description = "The body is neither application/scim+json nor application/json", content_type = "application/scim+json", body = ScimErrorView),
                (status = 412, description = "`If-Match` does not match", content_type = "application/scim+json", body = ScimErrorView)),
            security(("scim_token" = [])))]
        pub async fn $replace(state: web::Data<AppState>, req: HttpRequest, path: One, body: Body) -> Result<HttpResponse, ScimError> {
            change(&state, &req, &path, $kind, body, false).await
        }

        #[utoipa::path(patch, path = concat!("/v1/applications/{application_id}/scim/v2/{directory_id}/", $segment, "/{resource_id}"), tag = "scim",
            summary = concat!("Change a ", $name, " with PATCH operations (RFC 7644 section 3.5.2), all or none."),
            extensions(("x-gatehouse-caller" = json!("scim_client"))),
            params(("application_id" = uuid::Uuid, Path, description = "The application's id."),
                ("directory_id" = uuid::Uuid, Path, description = "The directory's id."),
                ("resource_id" = String, Path, description = "The resource's id.")),
            request_body(content = ScimPatchView, content_type = "application/scim+json"),
            responses((status = 200, description = "The resource as stored", content_type = "application/scim+json", body = ScimResourceView),
                (status = 400, description = "invalidSyntax, invalidPath, invalidValue, noTarget or mutability", content_type = "application/scim+json", body = ScimErrorView),
                (status = 401, description = "The bearer token is missing or not the directory's", content_type = "application/scim+json", body = ScimErrorView),
                (status = 404, description = "No such resource", content_type = "application/scim+json", body = ScimErrorView),
                (status = 409, description = "uniqueness", content_type = "application/scim+json", body = ScimErrorView),
                (status = 413, description = "The body is over 1 MiB", content_type = "application/scim+json", body = ScimErrorView),
                (status = 415, description = "The body is neither application/scim+json nor application/json", content_type = "application/scim+json", body = ScimErrorView),
                (status = 412, description = "`If-Match` does not match", content_type = "application/scim+json", body = ScimErrorView)),
            security(("scim_token" = [])))]
        pub async fn $patch(state: web::Data<AppState>, req: HttpRequest, path: One, body: Body) -> Result<HttpResponse, ScimError> {
            change(&state, &req, &path, $kind, body, true).await
        }

        #[utoipa::path(delete, path = concat!("/v1/applications/{application_id}/scim/v2/{directory_id}/", $segment, "/{resource_id}"), tag = "scim",
            summary = concat!("Delete a ", $name, ": a user is deprovisioned, a group's members lose the role it gave."),
            extensions(("x-gatehouse-caller" = json!("scim_client"))),
            params(("application_id" = uuid::Uuid, Path, description = "The application's id."),
                ("directory_id" = uuid::Uuid, Path, description = "The directory's id."),
                ("resource_id" = String, Path, description = "The resource's id.")),
            responses((status = 204, description = "Deleted"),
                (status = 401, description = "The bearer token is missing or not the directory's", content_type = "application/scim+json", body = ScimErrorView),
                (status = 404, description = "No such resource", content_type = "application/scim+json", body = ScimErrorView),
                (status = 412, description = "`If-Match` does not match", content_type = "application/scim+json", body = ScimErrorView)),
            security(("scim_token" = [])))]
        pub async fn $delete(state: web::Data<AppState>, req: HttpRequest, path: One) -> Result<HttpResponse, ScimError> {
            delete(&state, &req, &path, $kind).await
        }
    };
}

scim_operations!(
    Kind::User,
    "Users",
    "user",
    scim_list_users,
    scim_create_user,
    scim_find_user,
    scim_replace_user,
    scim_patch_user,
    scim_delete_user
);
scim_operations!(
    Kind::Group,
    "Groups",
    "group",
    scim_list_groups,
    scim_create_group,
    scim_find_group,
    scim_replace_group,
    scim_patch_group,
    scim_delete_group
);

/// A SCIM resource (a User or a Group, RFC 7643 sections 4.1 and 4.2), or a ListResponse of them.
#[derive(ToSchema)]
#[schema(value_type = Object)]
pub struct ScimResourceView(#[allow(dead_code)] Value);

/// A PatchOp request (RFC 7644 section 3.5.2).
#[derive(ToSchema)]
#[schema(value_type = Object)]
pub struct ScimPatchView(#[allow(dead_code)] Value);

/// A SCIM error (RFC 7644 section 3.12), as `ScimError::body` writes it.
#[derive(ToSchema)]
#[schema(example = json!({
    "schemas": ["urn:ietf:params:scim:api:messages:2.0:Error"],
    "status": "409",
    "scimType": "uniqueness",
    "detail": "the directory has a User with this userName"
}))]
#[allow(dead_code)] // the document's description only
pub struct ScimErrorView {
    /// `["urn:ietf:params:scim:api:messages:2.0:Error"]`.
    schemas: Vec<String>,
    /// The HTTP status, as a string.
    status: String,
    /// The error's kind where RFC 7644 names one: `invalidFilter`,
    /// `invalidSyntax`, `invalidValue`, `invalidPath`, `noTarget`,
    /// `mutability` or `uniqueness`.
    #[schema(rename = "scimType")]
    scim_type: Option<String>,
    detail: String,
}

/// What the server supports (RFC 7643 section 5): PATCH, filters, ETags; no bulk, no sorting.
#[utoipa::path(get, path = "/v1/applications/{application_id}/scim/v2/{directory_id}/ServiceProviderConfig", tag = "scim",
    extensions(("x-gatehouse-caller" = json!("scim_client"))),
    params(("application_id" = uuid::Uuid, Path, description = "The application's id."),
        ("directory_id" = uuid::Uuid, Path, description = "The directory's id.")),
    responses((status = 200, description = "What the server supports", content_type = "application/scim+json", body = ScimResourceView),
        (status = 401, description = "The bearer token is missing or not the directory's", content_type = "application/scim+json", body = ScimErrorView),
        (status = 404, description = "No such application", content_type = "application/scim+json", body = ScimErrorView)),
    security(("scim_token" = [])))]
pub async fn service_provider_config(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: Base,
) -> Result<HttpResponse, ScimError> {
    let caller = caller(&state, &req, &path.0, &path.1).await?;
    Ok(answer(StatusCode::OK, &schema::service_provider_config(&caller.directory.base_url, MAX_RESULTS as usize)))
}

/// The resource types: User and Group.
#[utoipa::path(get, path = "/v1/applications/{application_id}/scim/v2/{directory_id}/ResourceTypes", tag = "scim",
    extensions(("x-gatehouse-caller" = json!("scim_client"))),
    params(("application_id" = uuid::Uuid, Path, description = "The application's id."),
        ("directory_id" = uuid::Uuid, Path, description = "The directory's id.")),
    responses((status = 200, description = "A ListResponse of ResourceTypes", content_type = "application/scim+json", body = ScimResourceView),
        (status = 401, description = "The bearer token is missing or not the directory's", content_type = "application/scim+json", body = ScimErrorView),
        (status = 404, description = "No such application", content_type = "application/scim+json", body = ScimErrorView)),
    security(("scim_token" = [])))]
pub async fn resource_types(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: Base,
) -> Result<HttpResponse, ScimError> {
    let caller = caller(&state, &req, &path.0, &path.1).await?;
    let all = [Kind::User, Kind::Group].map(|k| schema::resource_type_document(k, &caller.directory.base_url));
    Ok(list_answer(all.to_vec(), 2, 1))
}

/// One resource type, by name (`User`, `Group`).
#[utoipa::path(get, path = "/v1/applications/{application_id}/scim/v2/{directory_id}/ResourceTypes/{name}", tag = "scim",
    extensions(("x-gatehouse-caller" = json!("scim_client"))),
    params(("application_id" = uuid::Uuid, Path, description = "The application's id."),
        ("directory_id" = uuid::Uuid, Path, description = "The directory's id."),
        ("name" = String, Path, description = "`User` or `Group`.")),
    responses((status = 200, description = "The ResourceType", content_type = "application/scim+json", body = ScimResourceView),
        (status = 401, description = "The bearer token is missing or not the directory's", content_type = "application/scim+json", body = ScimErrorView),
        (status = 404, description = "No such resource type", content_type = "application/scim+json", body = ScimErrorView)),
    security(("scim_token" = [])))]
pub async fn resource_type(state: web::Data<AppState>, req: HttpRequest, path: One) -> Result<HttpResponse, ScimError> {
    let caller = caller(&state, &req, &path.0, &path.1).await?;
    let kind = Kind::of(&path.2).ok_or_else(|| ScimError::not_found("Resource type", &path.2))?;
    Ok(answer(StatusCode::OK, &schema::resource_type_document(kind, &caller.directory.base_url)))
}

/// The schemas of Users and Groups.
#[utoipa::path(get, path = "/v1/applications/{application_id}/scim/v2/{directory_id}/Schemas", tag = "scim",
    extensions(("x-gatehouse-caller" = json!("scim_client"))),
    params(("application_id" = uuid::Uuid, Path, description = "The application's id."),
        ("directory_id" = uuid::Uuid, Path, description = "The directory's id.")),
    responses((status = 200, description = "A ListResponse of Schemas", content_type = "application/scim+json", body = ScimResourceView),
        (status = 401, description = "The bearer token is missing or not the directory's", content_type = "application/scim+json", body = ScimErrorView),
        (status = 404, description = "No such application", content_type = "application/scim+json", body = ScimErrorView)),
    security(("scim_token" = [])))]
pub async fn schemas(state: web::Data<AppState>, req: HttpRequest, path: Base) -> Result<HttpResponse, ScimError> {
    let caller = caller(&state, &req, &path.0, &path.1).await?;
    let all = [Kind::User, Kind::Group].map(|k| schema::schema_document(k, &caller.directory.base_url));
    Ok(list_answer(all.to_vec(), 2, 1))
}

/// One schema, by its URN.
#[utoipa::path(get, path = "/v1/applications/{application_id}/scim/v2/{directory_id}/Schemas/{schema_id}", tag = "scim",
    extensions(("x-gatehouse-caller" = json!("scim_client"))),
    params(("application_id" = uuid::Uuid, Path, description = "The application's id."),
        ("directory_id" = uuid::Uuid, Path, description = "The directory's id."),
        ("schema_id" = String, Path, description = "The schema's URN.")),
    responses((status = 200, description = "The Schema", content_type = "application/scim+json", body = ScimResourceView),
        (status = 401, description = "The bearer token is missing or not the directory's", content_type = "application/scim+json", body = ScimErrorView),
        (status = 404, description = "No such schema", content_type = "application/scim+json", body = ScimErrorView)),
    security(("scim_token" = [])))]
pub async fn schema_by_id(state: web::Data<AppState>, req: HttpRequest, path: One) -> Result<HttpResponse, ScimError> {
    let caller = caller(&state, &req, &path.0, &path.1).await?;
    let kind = [Kind::User, Kind::Group].into_iter().find(|k| k.schema_urn() == path.2);
    let kind = kind.ok_or_else(|| ScimError::not_found("Schema", &path.2))?;
    Ok(answer(StatusCode::OK, &schema::schema_document(kind, &caller.directory.base_url)))
}
