use sea_orm_migration::prelude::*;

/// Every list is `WHERE application_id = ? [AND <owner> = ?] ORDER BY
/// created_at, <id> LIMIT n`. An index on exactly those columns lets the
/// database read the page and stop; without the trailing tiebreak (or the
/// order at all) it read every row of the application and sorted them, so
/// a list got dearer with every row ever created (issue 17: secret keys
/// created and revoked under load halved the request rate in minutes).
#[derive(DeriveMigrationName)]
pub struct Migration;

/// One list's index and the index it replaces (a prefix of it, now redundant).
struct ListIndex {
    name: &'static str,
    table: &'static str,
    columns: &'static [&'static str],
    replaces: Option<(&'static str, usize)>,
}

const fn list(name: &'static str, table: &'static str, columns: &'static [&'static str]) -> ListIndex {
    ListIndex { name, table, columns, replaces: None }
}

const fn replacing(index: ListIndex, old: &'static str, old_width: usize) -> ListIndex {
    ListIndex { replaces: Some((old, old_width)), ..index }
}

const INDEXES: &[ListIndex] = &[
    replacing(
        list("api_keys_list", "api_keys", &["application_id", "created_at", "id"]),
        "api_keys_application_id_created_at",
        2,
    ),
    replacing(
        list("user_api_keys_list", "user_api_keys", &["application_id", "user_id", "created_at", "id"]),
        "user_api_keys_application_id_user_id",
        2,
    ),
    list("users_list", "users", &["application_id", "created_at", "id"]),
    replacing(
        list("sessions_list", "sessions", &["application_id", "user_id", "created_at", "id"]),
        "sessions_application_id_user_id",
        2,
    ),
    list("organizations_list", "organizations", &["application_id", "created_at", "id"]),
    list("memberships_list", "memberships", &["application_id", "organization_id", "created_at", "user_id"]),
    replacing(list("webhooks_list", "webhooks", &["application_id", "created_at", "id"]), "webhooks_application_id", 1),
    replacing(
        list("webhook_messages_list", "webhook_messages", &["application_id", "webhook_id", "created_at", "id"]),
        "webhook_messages_webhook",
        3,
    ),
];

fn create(name: &str, table: &str, columns: &[&str]) -> IndexCreateStatement {
    // SQLite runs a migration's statements outside a transaction: a step
    // that already happened before a crash must not stop the rerun.
    let mut statement = Index::create().if_not_exists().name(name).table(Alias::new(table)).to_owned();
    for column in columns {
        statement.col(Alias::new(*column));
    }
    statement
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for index in INDEXES {
            manager.create_index(create(index.name, index.table, index.columns)).await?;
            if let Some((old, _)) = index.replaces {
                manager
                    .drop_index(Index::drop().if_exists().name(old).table(Alias::new(index.table)).to_owned())
                    .await?;
            }
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for index in INDEXES {
            if let Some((old, width)) = index.replaces {
                manager.create_index(create(old, index.table, &index.columns[..width])).await?;
            }
            manager
                .drop_index(Index::drop().if_exists().name(index.name).table(Alias::new(index.table)).to_owned())
                .await?;
        }
        Ok(())
    }
}
