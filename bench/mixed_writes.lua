-- The soak's other write paths, in turn on each connection: create an
-- organization, rename it, create a user with a profile, change the
-- profile, and every tenth round sign the user in (one argon2 hash).
-- $APP and $KEY name the caller. Every change is an audit row, and so a
-- webhook delivery when an endpoint listens.
dofile("bench/report.lua")

dofile("bench/threads.lua")

function init(args)
  app = os.getenv("APP")
  key = os.getenv("KEY")
  step = 0
  round = 0
end

local function json_headers(with_key)
  local h = {["content-type"] = "application/json", ["x-application-id"] = app}
  if with_key then h["authorization"] = "Bearer " .. key end
  return h
end

function request()
  step = step % 5 + 1
  local tag = index .. "-" .. round .. "-" .. os.time()
  if step == 1 then
    round = round + 1
    return wrk.format("POST", "/v1/organizations", json_headers(true), '{"name":"Soak ' .. tag .. '"}')
  elseif step == 2 and org then
    return wrk.format("PATCH", "/v1/organizations/" .. org, json_headers(true), '{"name":"Soak renamed ' .. tag .. '"}')
  elseif step == 3 then
    email = "soak-" .. tag .. "@example.com"
    return wrk.format("POST", "/v1/users", json_headers(true),
      '{"email":"' .. email .. '","password":"correct horse battery","profile":{}}')
  elseif step == 4 and user then
    return wrk.format("PATCH", "/v1/users/" .. user, json_headers(true), '{"profile":{}}')
  elseif step == 5 and email and round % 10 == 0 then
    return wrk.format("POST", "/v1/auth/sign-in", json_headers(false),
      '{"email":"' .. email .. '","password":"correct horse battery"}')
  end
  return wrk.format("GET", "/v1/organizations?limit=10", json_headers(true), nil)
end

function response(status, headers, body)
  if status == 201 and step == 1 then
    org = body:match('"id":"([^"]+)"')
  elseif status == 201 and step == 3 then
    user = body:match('"id":"([^"]+)"')
  end
end
