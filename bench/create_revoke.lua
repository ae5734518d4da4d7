-- Secret keys created and revoked in turn, forever: each connection creates
-- a key, then revokes the key it created. $APP and $KEY name the caller.
dofile("bench/report.lua")

dofile("bench/threads.lua")

function init(args)
  app = os.getenv("APP")
  key = os.getenv("KEY")
  created = nil
  n = 0
end

function request()
  local headers = {["content-type"] = "application/json", ["x-application-id"] = app, ["authorization"] = "Bearer " .. key}
  if created then
    local path = "/v1/api-keys/" .. created .. "/revoke"
    created = nil
    return wrk.format("POST", path, headers, nil)
  end
  n = n + 1
  return wrk.format("POST", "/v1/api-keys", headers, '{"name":"soak-' .. index .. '-' .. n .. '-' .. os.time() .. '"}')
end

function response(status, headers, body)
  if status == 201 then
    created = body:match('"id":"([^"]+)"')
  end
end
