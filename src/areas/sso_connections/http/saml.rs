//! A SAML connection's service-provider endpoints, under the application
//! (a SAML identity provider's browser carries no header, and an
//! IdP-initiated response no `RelayState` of ours): the SP metadata, for
//! the identity provider's administrator to import, and the assertion
//! consumer service, where the identity provider's response is posted.
use actix_web::{http::StatusCode, web, HttpRequest, HttpResponse};

use crate::{
    area::{ApplicationFrom, ApplicationIn, Area},
    areas::{
        provider_sign_in::{self, assertion::SamlPost, ProviderSignInError},
        sso_connections::{self, saml},
    },
    auth::{
        public::{client_ip, limit, tenant_in_path},
        public_scope,
    },
    error::{ApiError, ApiResult},
    http::{body::Body, path_id, redirect},
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
#[openapi(paths(saml_metadata, saml_acs))]
struct Operations;

const METADATA_ROUTE: &str = "/v1/applications/{application_id}/sso/{connection_id}/saml/metadata";
const ACS_ROUTE: &str = "/v1/applications/{application_id}/sso/{connection_id}/saml/acs";

pub const APPLICATION_IN: &[ApplicationIn] = &[
    ApplicationIn { route: METADATA_ROUTE, from: ApplicationFrom::Path },
    ApplicationIn { route: ACS_ROUTE, from: ApplicationFrom::Path },
];

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource(&METADATA_ROUTE["/v1".len()..]).route(web::get().to(saml_metadata)))
        .service(web::resource(&ACS_ROUTE["/v1".len()..]).route(web::post().to(saml_acs)));
}

/// The application of the path and its SAML connection; anything else
/// (an unknown application or connection, an OpenID one) is 404.
async fn connection(
    state: &AppState,
    req: &HttpRequest,
    (application, connection): &(String, String),
) -> ApiResult<(TenantScope, entity::sso_connection::Model)> {
    let tenant = tenant_in_path(state, req, application).await?;
    let scope = public_scope(state, tenant).ok_or_else(|| ApiError::not_found("Application", application))?;
    let id = path_id("SSO connection", connection)?;
    let row = sso_connections::find_any(&scope, id)
        .await?
        .filter(|row| row.protocol == sso_connections::SAML)
        .ok_or_else(|| ApiError::not_found("SSO connection", id))?;
    Ok((scope, row))
}

/// The service provider's metadata of a SAML connection (an
/// `EntityDescriptor` with its `SPSSODescriptor`): its entity ID (this
/// URL) and its assertion consumer service (HTTP-POST binding).
#[utoipa::path(get, path = "/v1/applications/{application_id}/sso/{connection_id}/saml/metadata", tag = "sso",
    extensions(("x-gatehouse-caller" = json!("browser"))),
    params(("application_id" = Uuid, Path), ("connection_id" = Uuid, Path)),
    responses((status = 200, description = "The SP metadata", content_type = "application/samlmetadata+xml", body = String),
        (status = 404, description = "No such application, or no SAML connection of that id")))]
pub async fn saml_metadata(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> ApiResult<HttpResponse> {
    let (_, row) = connection(&state, &req, &path).await?;
    let sp = saml::credentials::service_provider(&state.master_key, &state.settings.public_url(), &row);
    let xml = sp.metadata_xml().map_err(|err| {
        tracing::warn!(error = %err, "SAML SP metadata could not be made");
        ApiError::unavailable("The metadata could not be made; try again.")
    })?;
    Ok(HttpResponse::Ok().content_type("application/samlmetadata+xml").body(xml))
}

/// A SAML response by the HTTP-POST binding (SAML Bindings section 3.5.4).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // the document's description; read by hand (`oauth_form::read`)
pub struct SamlPostForm {
    /// The identity provider's `<Response>`, base64.
    #[serde(rename = "SAMLResponse")]
    saml_response: String,
    /// Ours, given back unchanged; none when the sign-in is IdP-initiated.
    #[serde(rename = "RelayState")]
    relay_state: Option<String>,
}

/// The assertion consumer service of a SAML connection (HTTP-POST
/// binding): takes the flow its `RelayState` names once, checks the
/// response against the request that flow sent and the identity
/// provider's metadata (a signature by one of its certificates, our
/// audience, recipient and destination, `InResponseTo`, the time bounds),
/// then signs the user in as through an OpenID connection: 303 to the
/// application's `redirect_uri` with a one-time `code`, or an `error`
/// (those of the SSO callback, and `invalid_saml_response`). A response
/// without our `RelayState` is IdP-initiated: refused unless the
/// connection allows those (`idp_initiated`), when it goes to the
/// connection's `idp_initiated_redirect_uri`. Each response and assertion
/// ID is used once.
#[utoipa::path(post, path = "/v1/applications/{application_id}/sso/{connection_id}/saml/acs", tag = "sso",
    extensions(("x-gatehouse-caller" = json!("browser"))),
    params(("application_id" = Uuid, Path), ("connection_id" = Uuid, Path)),
    request_body(content = SamlPostForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 303, description = "To the application's `redirect_uri`",
            headers(("Location" = String, description = "`redirect_uri` with `code` or `error`, and `state`"))),
        (status = 400, description = "`invalid_state`: a `RelayState` unknown, expired or already used, or none where the connection does not allow IdP-initiated sign-ins"),
        (status = 404, description = "No such application, or no SAML connection of that id"),
        (status = 429)))]
pub async fn saml_acs(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let (scope, row) = connection(&state, &req, &path).await?;
    let per_ip = state.settings.rate_limits.sign_in_per_ip_per_minute;
    limit(&state, &req, format!("saml_acs:ip:{}:{}", scope.tenant().id, client_ip(&req)), per_ip).await?;
    let invalid = || ApiError::from(ProviderSignInError::InvalidState);
    let bytes = body.raw().await?;
    let form = crate::http::oauth_form::read(&req, &bytes).map_err(|_| invalid())?;
    let Some(saml_response) = form.get("SAMLResponse").filter(|r| !r.is_empty()) else { return Err(invalid()) };
    let post = SamlPost {
        connection: row,
        saml_response: saml_response.clone(),
        relay_state: form.get("RelayState").cloned(),
    };
    let deps = state.provider_sign_in();
    let location = provider_sign_in::assertion::saml_callback(&scope, &deps, &state.hook_caller(), post).await?;
    Ok(redirect(StatusCode::SEE_OTHER, &location))
}
