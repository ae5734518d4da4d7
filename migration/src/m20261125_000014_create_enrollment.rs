use sea_orm_migration::prelude::*;

/// Host enrollment in each region: host groups, enrollment tokens (only the
/// SHA-256 of the secret is kept) and the hosts they enrolled.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(HostGroups::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(HostGroups::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(HostGroups::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(HostGroups::Name).string().not_null())
                    .col(ColumnDef::new(HostGroups::CreatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(EnrollmentTokens::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(EnrollmentTokens::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(EnrollmentTokens::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(EnrollmentTokens::Label).string().not_null())
                    .col(ColumnDef::new(EnrollmentTokens::HostGroupId).uuid().null())
                    .col(ColumnDef::new(EnrollmentTokens::Platform).string().null())
                    .col(ColumnDef::new(EnrollmentTokens::Prefix).string().not_null())
                    .col(ColumnDef::new(EnrollmentTokens::SecretHash).binary().not_null())
                    .col(ColumnDef::new(EnrollmentTokens::ExpiresAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(EnrollmentTokens::MaxUses).integer().null())
                    .col(ColumnDef::new(EnrollmentTokens::Uses).integer().not_null().default(0))
                    .col(ColumnDef::new(EnrollmentTokens::RevokedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(EnrollmentTokens::CreatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(Hosts::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(Hosts::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(Hosts::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(Hosts::Hostname).string().not_null())
                    .col(ColumnDef::new(Hosts::Platform).string().not_null())
                    .col(ColumnDef::new(Hosts::HostGroupId).uuid().null())
                    .col(ColumnDef::new(Hosts::EnrollmentTokenId).uuid().not_null())
                    .col(ColumnDef::new(Hosts::EnrolledAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        let indexes = [
            // Names are unique within an application (409 `conflict`).
            Index::create()
                .if_not_exists()
                .name("host_groups_name")
                .table(HostGroups::Table)
                .col(HostGroups::ApplicationId)
                .col(HostGroups::Name)
                .unique()
                .to_owned(),
            // The lists' order: `WHERE application_id = ? ORDER BY created_at DESC, id DESC`.
            Index::create()
                .if_not_exists()
                .name("host_groups_list")
                .table(HostGroups::Table)
                .col(HostGroups::ApplicationId)
                .col(HostGroups::CreatedAt)
                .col(HostGroups::Id)
                .to_owned(),
            Index::create()
                .if_not_exists()
                .name("enrollment_tokens_secret_hash")
                .table(EnrollmentTokens::Table)
                .col(EnrollmentTokens::SecretHash)
                .unique()
                .to_owned(),
            Index::create()
                .if_not_exists()
                .name("enrollment_tokens_list")
                .table(EnrollmentTokens::Table)
                .col(EnrollmentTokens::ApplicationId)
                .col(EnrollmentTokens::CreatedAt)
                .col(EnrollmentTokens::Id)
                .to_owned(),
            Index::create()
                .if_not_exists()
                .name("hosts_list")
                .table(Hosts::Table)
                .col(Hosts::ApplicationId)
                .col(Hosts::EnrolledAt)
                .col(Hosts::Id)
                .to_owned(),
        ];
        for index in indexes {
            manager.create_index(index).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(Hosts::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(EnrollmentTokens::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(HostGroups::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum HostGroups {
    Table,
    Id,
    ApplicationId,
    Name,
    CreatedAt,
}

#[derive(DeriveIden)]
enum EnrollmentTokens {
    Table,
    Id,
    ApplicationId,
    Label,
    HostGroupId,
    Platform,
    Prefix,
    SecretHash,
    ExpiresAt,
    MaxUses,
    Uses,
    RevokedAt,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Hosts {
    Table,
    Id,
    ApplicationId,
    Hostname,
    Platform,
    HostGroupId,
    EnrollmentTokenId,
    EnrolledAt,
}
