use sea_orm::entity::prelude::*;

/// A SCIM directory of an organization (regional): the organization's
/// identity provider provisions users and groups into it with a bearer
/// token, of which only the SHA-256 is kept.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "scim_directories")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub organization_id: Uuid,
    pub name: String,
    pub token_hash: Vec<u8>,
    pub token_prefix: String,
    /// JSON array of `{group, role}`: a user's role in the organization is
    /// the role of the first entry naming one of their groups, else `member`.
    pub group_roles: Json,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

/// Written by hand so that `{:?}` never shows the token's hash; the
/// pattern names every field, so a new column does not compile until it is
/// listed.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            id,
            application_id,
            organization_id,
            name,
            token_hash: _,
            token_prefix,
            group_roles,
            created_at,
            updated_at,
        } = self;
        f.debug_struct("Model")
            .field("id", id)
            .field("application_id", application_id)
            .field("organization_id", organization_id)
            .field("name", name)
            .field("token_hash", &crate::REDACTED)
            .field("token_prefix", token_prefix)
            .field("group_roles", group_roles)
            .field("created_at", created_at)
            .field("updated_at", updated_at)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
