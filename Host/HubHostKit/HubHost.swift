public enum HubHost {}
