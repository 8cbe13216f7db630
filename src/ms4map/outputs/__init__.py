"""What people read: folium maps, click identification and outfall PDFs
(:mod:`.maps`), determination reports (:mod:`.report`) and exports to GIS formats
(:mod:`.export`)."""
