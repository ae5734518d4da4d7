-- SCIM provisioning under load: each request creates a new User with an
-- email (a Gatehouse user, its membership and their audit rows, in one
-- transaction). $BASE_PATH is the directory's base path, $TOKEN its token.
dofile("bench/report.lua")

dofile("bench/threads.lua")

function init(args)
  headers = {["content-type"] = "application/scim+json", ["authorization"] = "Bearer " .. os.getenv("TOKEN")}
  base = os.getenv("BASE_PATH")
  n = 0
end

function request()
  n = n + 1
  local name = "t" .. index .. "-" .. n .. "@bench.example"
  return wrk.format("POST", base .. "/Users", headers,
    '{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"' .. name ..
    '","name":{"givenName":"Bench","familyName":"User"},"emails":[{"value":"' .. name .. '","primary":true}]}')
end
