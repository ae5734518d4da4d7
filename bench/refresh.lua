-- Refresh-token rotation under load: each wrk thread drives one connection
-- and one session, presenting the refresh token the previous answer gave
-- (a token presented twice would revoke its session). Tokens come one per
-- line from $TOKENS_FILE. Gatehouse's route takes JSON and the application
-- from $APP; with $BASIC (a client's id and secret, already base64) the
-- request is an OAuth 2.0 refresh_token grant instead (the peer's /token).
dofile("bench/report.lua")

dofile("bench/threads.lua")

function init(args)
  local line = 0
  for value in io.lines(os.getenv("TOKENS_FILE")) do
    line = line + 1
    if line == index then token = value end
  end
  app = os.getenv("APP")
  basic = os.getenv("BASIC")
  if basic == "" then basic = nil end
end

function request()
  if basic then
    return wrk.format("POST", nil,
      {["content-type"] = "application/x-www-form-urlencoded", ["authorization"] = "Basic " .. basic},
      "grant_type=refresh_token&refresh_token=" .. token)
  end
  return wrk.format("POST", nil, {["content-type"] = "application/json", ["x-application-id"] = app},
    '{"refresh_token":"' .. token .. '"}')
end

function response(status, headers, body)
  if status == 200 then
    token = body:match('"refresh_token":"([^"]+)"')
  end
end
