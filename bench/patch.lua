-- Every request changes the application's name: one audit event each.
wrk.method = "PATCH"
wrk.body = '{"name": "bench"}'
wrk.headers["content-type"] = "application/json"
