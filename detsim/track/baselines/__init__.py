"""The renders that make the stored golden image hashes, hashed as the asv tracks hash them."""
