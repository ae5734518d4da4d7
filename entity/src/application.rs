use sea_orm::entity::prelude::*;

/// The application directory and its account-level settings (catalog database).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "applications")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub account_id: Uuid,
    pub name: String,
    /// `development`, `staging` or `production`.
    pub environment: String,
    /// `us`, `eu` or `ap`: which regional database holds the application's data.
    pub region: String,
    /// JSON array of origins (the CORS allowlist).
    pub allowed_origins: Json,
    pub branding: Json,
    /// Seconds (0 to 60) in which a just-rotated refresh token may be
    /// presented again for a new pair of the same session.
    pub refresh_reuse_interval_seconds: i32,
    /// JSON array of feature keys an access token with an active
    /// organization carries resolved (its `ent` claim); null: none.
    pub entitlement_claims: Option<Json>,
    /// Sign-in refuses a user whose email is not verified.
    pub require_verified_email: bool,
    /// The allowed origins may show the hosted sign-in pages in a frame.
    pub hosted_pages_in_frames: bool,
    /// JSON array of end-user actions that need a session at `aal2`
    /// (`create_personal_key`, `revoke_personal_key`); null: none.
    pub require_aal2_for: Option<Json>,
    /// The WebAuthn relying-party id of the application's passkeys (a
    /// domain its allowed origins are on); null: passkeys are off.
    pub passkey_rp_id: Option<String>,
    /// Set while the application's data is being moved to this region
    /// (its requests get 503 `region_migration_in_progress`); see `region_moves`.
    pub moving_to: Option<String>,
    /// Which shard of its region holds the application's data (null: the
    /// region's first, named after it).
    pub shard: Option<String>,
    /// The shard of `moving_to` the move copies into (null: its first).
    pub moving_to_shard: Option<String>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
