"""The Postgres store on a real server, and the commands on it."""
