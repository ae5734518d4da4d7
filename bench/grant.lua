-- Membership grants under load: each request gives a new (user,
-- organization) pair a role that an enforced separation-of-duties policy
-- names, so every grant takes the user's row lock and reads the user's
-- memberships. Users and organizations come one id per line from
-- $USERS_FILE and $ORGS_FILE; the secret key and application from $KEY and
-- $APP. Thread `index` of `threads` walks its own share of the pairs.
dofile("bench/report.lua")

dofile("bench/threads.lua")

function init(args)
  users, orgs = {}, {}
  for id in io.lines(os.getenv("USERS_FILE")) do users[#users + 1] = id end
  for id in io.lines(os.getenv("ORGS_FILE")) do orgs[#orgs + 1] = id end
  headers = {["content-type"] = "application/json", ["x-application-id"] = os.getenv("APP"),
    ["authorization"] = "Bearer " .. os.getenv("KEY")}
  n = index - 1
end

function request()
  -- Consecutive requests go to different organizations (each grant locks its organization's row).
  local org_index = n % #orgs
  local user = users[(math.floor(n / #orgs) % #users) + 1]
  n = n + 2
  local role = "approver" .. (org_index % 10)
  return wrk.format("POST", "/v1/organizations/" .. orgs[org_index + 1] .. "/memberships", headers,
    '{"user_id":"' .. user .. '","role":"' .. role .. '"}')
end
