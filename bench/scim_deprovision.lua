-- SCIM deprovisioning under load: each request sets a different User
-- inactive (its membership ended, its sessions revoked, their audit rows).
-- User ids come one per line from $IDS_FILE; thread `index` of `threads`
-- walks its own share of them, once each.
dofile("bench/report.lua")

dofile("bench/threads.lua")

function init(args)
  ids = {}
  for id in io.lines(os.getenv("IDS_FILE")) do ids[#ids + 1] = id end
  headers = {["content-type"] = "application/scim+json", ["authorization"] = "Bearer " .. os.getenv("TOKEN")}
  base = os.getenv("BASE_PATH")
  n = index - 1
end

function request()
  local id = ids[(n % #ids) + 1]
  n = n + 2
  return wrk.format("PATCH", base .. "/Users/" .. id, headers,
    '{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","path":"active","value":false}]}')
end
