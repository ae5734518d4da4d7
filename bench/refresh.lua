-- Refresh-token rotation under load: each wrk thread drives one connection
-- and one session, presenting the refresh token the previous answer gave
-- (a token presented twice would revoke its session). Tokens come one per
-- line from $TOKENS_FILE; the application from $APP.
dofile("bench/report.lua")

dofile("bench/threads.lua")

function init(args)
  local line = 0
  for value in io.lines(os.getenv("TOKENS_FILE")) do
    line = line + 1
    if line == index then token = value end
  end
  app = os.getenv("APP")
end

function request()
  return wrk.format("POST", nil, {["content-type"] = "application/json", ["x-application-id"] = app},
    '{"refresh_token":"' .. token .. '"}')
end

function response(status, headers, body)
  if status == 200 then
    token = body:match('"refresh_token":"([^"]+)"')
  end
end
