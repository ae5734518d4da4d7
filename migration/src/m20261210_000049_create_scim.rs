use sea_orm_migration::prelude::*;

/// SCIM 2.0 directories (RFC 7643, 7644): an organization's identity
/// provider provisions users and groups into it with a bearer token.
/// - `scim_directories`: one per directory; only the token's SHA-256 kept,
///   and the ordered list of group names that grant a role.
/// - `scim_resources`: each User and Group as the directory sent it
///   (`attributes`, the attributes of the published schema), with the
///   columns that filters and uniqueness need: `match_key` (the lower-cased
///   `userName` or `displayName`, unique per directory and kind) and
///   `external_id`; a User's Gatehouse user once it has an email.
/// - `scim_group_members`: which resources each group holds, for the role
///   a user's groups give.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(ScimDirectories::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(ScimDirectories::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(ScimDirectories::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(ScimDirectories::OrganizationId).uuid().not_null())
                    .col(ColumnDef::new(ScimDirectories::Name).string().not_null())
                    .col(ColumnDef::new(ScimDirectories::TokenHash).binary().not_null())
                    .col(ColumnDef::new(ScimDirectories::TokenPrefix).string().not_null())
                    .col(ColumnDef::new(ScimDirectories::GroupRoles).json().not_null())
                    .col(ColumnDef::new(ScimDirectories::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(ScimDirectories::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("scim_directories_by_organization")
                    .table(ScimDirectories::Table)
                    .col(ScimDirectories::ApplicationId)
                    .col(ScimDirectories::OrganizationId)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ScimResources::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(ScimResources::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(ScimResources::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(ScimResources::DirectoryId).uuid().not_null())
                    .col(ColumnDef::new(ScimResources::Kind).string().not_null())
                    .col(ColumnDef::new(ScimResources::MatchKey).string().not_null())
                    .col(ColumnDef::new(ScimResources::ExternalId).string().null())
                    .col(ColumnDef::new(ScimResources::UserId).uuid().null())
                    .col(ColumnDef::new(ScimResources::Active).boolean().not_null())
                    .col(ColumnDef::new(ScimResources::Attributes).json().not_null())
                    .col(ColumnDef::new(ScimResources::Version).big_integer().not_null())
                    .col(ColumnDef::new(ScimResources::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(ScimResources::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("scim_resources_by_match_key")
                    .table(ScimResources::Table)
                    .col(ScimResources::DirectoryId)
                    .col(ScimResources::Kind)
                    .col(ScimResources::MatchKey)
                    .unique()
                    .to_owned(),
            )
            .await?;
        // The other lookups lead with their own column, so that no index but
        // the one above fits a `userName` lookup, whatever the statistics say.
        for (name, column) in [
            ("scim_resources_by_external_id", ScimResources::ExternalId),
            ("scim_resources_by_user", ScimResources::UserId),
        ] {
            let index = Index::create().if_not_exists().name(name).table(ScimResources::Table).col(column).to_owned();
            manager.create_index(index).await?;
        }
        manager
            .create_table(
                Table::create()
                    .table(ScimGroupMembers::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(ScimGroupMembers::GroupId).uuid().not_null())
                    .col(ColumnDef::new(ScimGroupMembers::MemberId).uuid().not_null())
                    .col(ColumnDef::new(ScimGroupMembers::ApplicationId).uuid().not_null())
                    .primary_key(Index::create().col(ScimGroupMembers::GroupId).col(ScimGroupMembers::MemberId))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("scim_group_members_by_member")
                    .table(ScimGroupMembers::Table)
                    .col(ScimGroupMembers::MemberId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(ScimGroupMembers::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(ScimResources::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(ScimDirectories::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum ScimDirectories {
    Table,
    Id,
    ApplicationId,
    OrganizationId,
    Name,
    TokenHash,
    TokenPrefix,
    GroupRoles,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ScimResources {
    Table,
    Id,
    ApplicationId,
    DirectoryId,
    Kind,
    MatchKey,
    ExternalId,
    UserId,
    Active,
    Attributes,
    Version,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ScimGroupMembers {
    Table,
    GroupId,
    MemberId,
    ApplicationId,
}
