use sea_orm_migration::prelude::*;

/// How a user signed in on the hosted pages (RFC 8176 `amr` values,
/// space-separated: `pwd`, `fed`, `pop`, `otp`, `mfa`): kept with the
/// hosted sign-in's cookie and copied to each code it issues, for the ID
/// token's `amr`. Empty for rows made before (their `amr` is then read
/// off the session's assurance level, as before).
///
/// One batch of statements, run on one connection (see migration 000042).
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let statements = "ALTER TABLE hosted_logins ADD COLUMN amr varchar NULL; \
                          ALTER TABLE oauth_codes ADD COLUMN amr varchar NULL;";
        manager.get_connection().execute_unprepared(statements).await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let statements = "ALTER TABLE hosted_logins DROP COLUMN amr; ALTER TABLE oauth_codes DROP COLUMN amr;";
        manager.get_connection().execute_unprepared(statements).await?;
        Ok(())
    }
}
