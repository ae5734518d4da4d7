-- Password sign-ins of one user ($EMAIL, $PASSWORD) of application $APP.
dofile("bench/report.lua")

function init(args)
  body = string.format('{"email":"%s","password":"%s"}', os.getenv("EMAIL"), os.getenv("PASSWORD"))
  app = os.getenv("APP")
end

function request()
  return wrk.format("POST", nil, {["content-type"] = "application/json", ["x-application-id"] = app}, body)
end
