-- Machine tokens: POST the issuer's token endpoint with client_credentials
-- and a service account's id and key as HTTP Basic ($BASIC, already base64).
dofile("bench/report.lua")

wrk.method = "POST"
wrk.body = "grant_type=client_credentials&scope=a+b"
wrk.headers["content-type"] = "application/x-www-form-urlencoded"
wrk.headers["authorization"] = "Basic " .. os.getenv("BASIC")
