//! What an area gives the node: its routes, its operations for the OpenAPI
//! document, and the settings every tenant state holds for it. Each area
//! declares one [`Area`] in its `http` module, and `routes::AREAS` lists
//! them once: the route table, the document and the tenant actors are all
//! built from that list, so a new area or a new tenant setting is written
//! in the area's own folder.
use actix_web::web;

use crate::tenancy::parts::Parts;

pub struct Area {
    /// The first `/v1` path segments of its routes (`users` of
    /// `/v1/users/…`). A request is matched only against the routes of the
    /// areas of its segment: actix tests every dynamic route it passes with
    /// a regular expression, so one flat list made each request pay for
    /// every route registered before its own.
    pub segments: &'static [&'static str],
    /// Registers its routes, with their whole `/v1`-relative paths.
    pub routes: fn(&mut web::ServiceConfig),
    /// Its operations, as `utoipa` describes them.
    pub operations: fn() -> utoipa::openapi::OpenApi,
    /// Adds the settings it keeps in every tenant state (`TenantPart`s).
    pub parts: fn(Parts) -> Parts,
}

impl Area {
    /// For an area that keeps nothing in the tenant state.
    pub fn no_parts(parts: Parts) -> Parts {
        parts
    }
}

/// A route whose requests name their application somewhere other than the
/// `x-application-id` header: public documents and token endpoints that
/// standard clients call, and browser redirects. The region router reads
/// these declarations (`routes::APPLICATION_ELSEWHERE`) to find the
/// application before routing.
pub struct ApplicationIn {
    /// The route's whole path pattern (`/v1/…`), as registered.
    pub route: &'static str,
    pub from: ApplicationFrom,
}

pub enum ApplicationFrom {
    /// The path's `{application_id}` segment.
    Path,
    /// A query parameter holding the id.
    Query(&'static str),
    /// A query parameter the area reads the id from (a sign-in's `state`).
    QueryRead(&'static str, fn(&str) -> Option<uuid::Uuid>),
}
